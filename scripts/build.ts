/**
 * `npm run build` (and `npm pack`, through `prepack`): compiles the TypeScript of both programs
 * into JavaScript under `dist/`, keeping the source layout (`dist/bin/teamctl.js`,
 * `dist/workflows/index.js`, …), so that an installed package runs on any maintained Node.js
 * without type stripping. Plain `tsc` with `rewriteRelativeImportExtensions` (tsconfig.build.json)
 * turns `./x.ts` imports into `./x.js`; nothing is bundled, because the Temporal worker bundles
 * the workflow modules itself at start (from `dist/workflows/index.js`) and PGlite loads its
 * WebAssembly from its own package. `dist/` is emptied first so no module of an older build
 * survives. Then the embedded database's template (`service/storage/pglite-template.ts`: the data
 * directory `initdb` makes) is made beside the built module, so an installed acs-server never runs
 * `initdb` itself. Exits with the first failing step's status.
 */
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
rmSync(new URL('../dist', import.meta.url), { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const result = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
if (result.status !== 0) process.exitCode = result.status ?? 1;
else {
  // V8's baseline compiler only: the step runs initdb once, optimising PGlite would only cost memory.
  const template = spawnSync(process.execPath, ['--liftoff-only', 'dist/service/storage/make-pglite-template.js'], { cwd: root, stdio: 'inherit' });
  process.exitCode = template.status ?? 1;
}
