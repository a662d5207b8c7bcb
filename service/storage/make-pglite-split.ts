/**
 * `node make-pglite-split.ts [DIR]`: rewrites the installed PGlite's module into the two of
 * `pglite-split.ts` at DIR, by default the ones the package ships beside this module
 * (`pglite-split/pglite-VERSION-split-sN`), and exits 0, or prints the error and exits 1. Run by
 * the server as a child process when it has none yet, and by `npm run build` for the package.
 */
import { join } from 'node:path';
import { makeSplit, shippedSplitDir, splitName } from './pglite-split.ts';
import { pgliteVersion } from './pglite-template.ts';

try {
  await makeSplit(process.argv[2] ?? join(shippedSplitDir(), splitName(await pgliteVersion())));
} catch (error) {
  process.stderr.write(`make-pglite-split: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
}
