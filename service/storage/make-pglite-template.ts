/**
 * `node make-pglite-template.ts FILE`: writes a PGlite template (`pglite-template.ts`) to FILE and
 * exits 0, or prints the error and exits 1. Run as a child process by the server when it has no
 * template yet, and by `npm run build` for the package.
 */
import { makeTemplate } from './pglite-template.ts';

const file = process.argv[2];
if (!file) {
  process.stderr.write('usage: make-pglite-template FILE\n');
  process.exitCode = 1;
} else {
  try {
    await makeTemplate(file);
  } catch (error) {
    process.stderr.write(`make-pglite-template: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  }
}
