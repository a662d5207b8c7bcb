/**
 * `npm run build` (and `npm pack`, through `prepack`): compiles the TypeScript of both programs
 * into JavaScript under `dist/`, keeping the source layout (`dist/bin/teamctl.js`,
 * `dist/workflows/index.js`, …), so that an installed package runs on any maintained Node.js
 * without type stripping. Plain `tsc` with `rewriteRelativeImportExtensions` (tsconfig.build.json)
 * turns `./x.ts` imports into `./x.js`; nothing is bundled, because the Temporal worker bundles
 * the workflow modules itself at start (from `dist/workflows/index.js`) and PGlite loads its
 * WebAssembly from its own package. `dist/` is emptied first so no module of an older build
 * survives. Then the console's browser bundle is built into `dist/console/` (console/build.ts).
 * Exits with tsc's status (or 1 when the console build fails).
 */
import { spawnSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('..', import.meta.url));
rmSync(new URL('../dist', import.meta.url), { recursive: true, force: true });
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const result = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: root, stdio: 'inherit' });
process.exitCode = result.status ?? 1;
if (result.status === 0) {
  // The console (console/build.ts): served by the installed acs-server from dist/console/.
  const { buildConsole } = await import('../console/build.ts');
  const info = await buildConsole(fileURLToPath(new URL('../dist/console', import.meta.url)));
  process.stdout.write(`build: console ${info.script} (${(info.script_bytes / 1024).toFixed(1)} KiB) into dist/console/\n`);
}
