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
    const npmCi = (node: string) =>
      run(node, [old!.npmCli, 'ci', '--dry-run', '--offline', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: dir, env: { ...process.env, npm_config_loglevel: 'warn' } }).then(
        (r) => r.stdout + r.stderr,
      );
    const onOld = await npmCi(old!.node);
    const warned = [...onOld.matchAll(/EBADENGINE {3}package: '([^']+)'/g)].map((m) => m[1]);
    // What the README describes: the project itself first, then some of its packages.
    expect(warned[0]).toMatch(/^teamctl@/);
    expect(warned.length).toBeGreaterThan(1);
    // The project's Node (the `node` devDependency, this very process) satisfies every one of them.
    expect(await npmCi(process.execPath)).not.toContain('EBADENGINE');
    expect(await readFile(join(root, 'README.md'), 'utf8')).toContain('`npm ci` warns `npm warn\nEBADENGINE Unsupported engine` for the project itself');
  });
});
