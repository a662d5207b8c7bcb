/**
 * What `npm ci` prints on a system Node older than the project's (the README's first command on
 * these machines' Node 20): EBADENGINE warnings, which the README calls expected and harmless
 * because each names a package the project's own Node 24 satisfies. npm's own check says so: the
 * same install (a dry run, offline) with npm run on the project's Node warns about nothing.
 */
import { execFile, execFileSync } from 'node:child_process';
import { copyFile, mkdtemp, readFile } from 'node:fs/promises';
import { realpathSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const root = resolve(import.meta.dirname, '../..');
const run = promisify(execFile);

/** The system's Node and npm when that Node is older than 22 (CI's Debian has Node 20), else undefined. */
function oldNpm(): { node: string; npmCli: string } | undefined {
  try {
    const node = '/usr/bin/node';
    const version = Number(/^v(\d+)/.exec(execFileSync(node, ['--version'], { encoding: 'utf8' }))?.[1]);
    if (!(version < 22)) return undefined;
    return { node, npmCli: realpathSync('/usr/bin/npm') };
  } catch {
    return undefined;
  }
}

const old = oldNpm();
const title = `npm ci on a Node older than 22 warns EBADENGINE only for packages the project's own Node runs${old ? '' : ' (skipped: needs a Node older than 22 and its npm at /usr/bin, as CI\'s Debian has)'}`;

describe('installing on an older system Node', () => {
  it.skipIf(!old)(title, async () => {
    const dir = await mkdtemp(join(tmpdir(), 'teamctl-npm-ci-'));
    await copyFile(join(root, 'package.json'), join(dir, 'package.json'));
    await copyFile(join(root, 'package-lock.json'), join(dir, 'package-lock.json'));
    // A dry run runs no script, but says which install scripts npm would leave out.
    const npmCi = (node: string) =>
      run(node, [old!.npmCli, 'ci', '--dry-run', '--offline', '--no-audit', '--no-fund'], { cwd: dir, env: { ...process.env, npm_config_loglevel: 'warn' } }).then(
        (r) => r.stdout + r.stderr,
      );
    const onOld = await npmCi(old!.node);
    const warned = [...onOld.matchAll(/EBADENGINE {3}package: '([^']+)'/g)].map((m) => m[1]);
    // What the README describes: the project itself first, then some of its packages.
    expect(warned[0]).toMatch(/^teamctl@/);
    expect(warned.length).toBeGreaterThan(1);
    // The project's Node (the `node` devDependency, this very process) satisfies every one of them.
    expect(await npmCi(process.execPath)).not.toContain('EBADENGINE');
    const readme = await readFile(join(root, 'README.md'), 'utf8');
    expect(readme).toContain('`npm ci` warns `npm warn\nEBADENGINE Unsupported engine` for the project itself');
    // What the README says of them holds: a block of five lines per package (and a count, were
    // it to give one, would be this npm's on this Node).
    expect(onOld.split('\n').filter((line) => line.startsWith('npm warn EBADENGINE')).length).toBe(5 * warned.length);
    expect(readme.replace(/\s+/g, ' ')).toContain('some of its packages, a block of five lines for each');
    const counted = /\((\d+) lines on Node (\d+)\)/.exec(readme);
    if (counted && `v${counted[2]}` === execFileSync(old!.node, ['--version'], { encoding: 'utf8' }).trim().split('.')[0]) {
      expect(Number(counted[1])).toBe(5 * warned.length);
    }
    // The install-scripts notice of an npm that runs no dependency's install script unless allowed:
    // the README names it and each package it names.
    const skipped = [...onOld.matchAll(/^npm warn install-scripts {3}(\S+)@\S+ \(/gm)].map((m) => m[1]!);
    if (skipped.length > 0) {
      expect(readme).toContain('`npm warn install-scripts … not yet covered by allowScripts`');
      for (const name of skipped) expect(readme).toContain(name);
    }
  });

  it.skipIf(!old)(`the first npx of a clone repeats the project's EBADENGINE block, and the README says why${old ? '' : ' (skipped: needs a Node older than 22)'}`, async () => {
    // A fresh npm cache is what a fresh clone meets: npx links the project into it the first time.
    const cache = await mkdtemp(join(tmpdir(), 'teamctl-npx-cache-'));
    const npx = old!.npmCli.replace(/npm-cli\.js$/, 'npx-cli.js');
    const first = await run(old!.node, [npx, 'teamctl', '--version'], { cwd: root, env: { ...process.env, npm_config_cache: cache, npm_config_offline: 'true', npm_config_loglevel: 'warn' } });
    const again = await run(old!.node, [npx, 'teamctl', '--version'], { cwd: root, env: { ...process.env, npm_config_cache: cache, npm_config_offline: 'true', npm_config_loglevel: 'warn' } });
    expect(again.stderr).not.toContain('EBADENGINE');
    if (first.stderr.includes('EBADENGINE')) {
      expect(first.stderr).toMatch(/package: 'teamctl@/);
      expect((await readFile(join(root, 'README.md'), 'utf8')).replace(/\s+/g, ' ')).toContain(
        'The first `npx` in a clone prints the project\'s block again (twice): npx links the clone into its own cache (`~/.npm/_npx`) that first time',
      );
    }
  });
});
