/**
 * `npm run build` (and `npm pack`, through `prepack`): compiles the TypeScript of both programs
 * into JavaScript under `dist/`, keeping the source layout (`dist/bin/teamctl.js`,
 * `dist/workflows/index.js`, …), so that an installed package runs on any maintained Node.js
 * without type stripping. Plain `tsc` with `rewriteRelativeImportExtensions` (tsconfig.build.json)
 * turns `./x.ts` imports into `./x.js`. `dist/` is emptied first so no module of an older build
 * survives.
 *
 * Then `teamctl` itself is bundled (rolldown) into `dist/bin/teamctl.js` and its chunks
 * (`dist/bin/teamctl-*.js`, one per command module, loaded when that command runs): a command
 * that loads 200 small modules spends most of its start-up finding and linking them, and the
 * bundle starts `teamctl validate` in half the CPU time (docs/performance.md, "Start-up"). Only
 * our own code and the small pure-JavaScript packages on the common path (`BUNDLED`) go in it;
 * every other package stays a package: Temporal's (its worker bundles the workflows from
 * `dist/workflows/` itself, and one copy of `@temporalio/common` must recognise the failures the
 * activities throw), OpenTelemetry, undici. `acs-server` is not bundled: PGlite loads its
 * WebAssembly from its own package.
 *
 * Last, the embedded database's template (`service/storage/pglite-template.ts`: the data
 * directory `initdb` makes) is made beside the built module, so an installed acs-server never runs
 * `initdb` itself, and so are PGlite's two modules of `--pglite-compiler mixed`
 * (`service/storage/pglite-split.ts`); and the console's browser bundle is built into `dist/console/`
 * (console/build.ts). Exits with the first failing step's status.
 */
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { build } from 'rolldown';

/** Packages bundled into `teamctl`: pure JavaScript, no assets, no identity shared with an external package. */
const BUNDLED = new Set(['commander', 'zod', 'yaml', 'fastest-levenshtein', 'croner', 'mustache', 'ms']);

const root = fileURLToPath(new URL('..', import.meta.url));
rmSync(new URL('../dist', import.meta.url), { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const compiled = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
if (compiled.status !== 0) {
  process.exitCode = compiled.status ?? 1;
} else {
  await build({
    input: { teamctl: `${root}bin/teamctl.ts` },
    platform: 'node',
    logLevel: 'warn',
    external: (id) => {
      if (id.startsWith('.') || id.startsWith('/')) return false;
      const name = id.startsWith('@') ? id.split('/').slice(0, 2).join('/') : id.split('/')[0]!;
      return !BUNDLED.has(name);
    },
    output: { dir: `${root}dist/bin`, format: 'esm', entryFileNames: '[name].js', chunkFileNames: 'teamctl-[name]-[hash].js' },
  });
  // V8's baseline compiler only: the step runs initdb once, optimising PGlite would only cost memory.
  const template = spawnSync(process.execPath, ['--liftoff-only', 'dist/service/storage/make-pglite-template.js'], { cwd: root, stdio: 'inherit' });
  // PGlite's module in two for `--pglite-compiler mixed` (pglite-split.ts): binaryen, a
  // devDependency, is here at build time and not in an installed package.
  const split = template.status === 0 ? spawnSync(process.execPath, ['--liftoff-only', 'dist/service/storage/make-pglite-split.js'], { cwd: root, stdio: 'inherit' }) : template;
  process.exitCode = split.status ?? 1;
  if (split.status === 0) {
    // The console (console/build.ts): served by the installed acs-server from dist/console/.
    const { buildConsole } = await import('../console/build.ts');
    const info = await buildConsole(fileURLToPath(new URL('../dist/console', import.meta.url)));
    process.stdout.write(`build: console ${info.script} (${(info.script_bytes / 1024).toFixed(1)} KiB) into dist/console/\n`);
  }
}
