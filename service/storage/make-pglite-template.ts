/**
 * `node make-pglite-template.ts [DIR]`: makes a PGlite template (`pglite-template.ts`) at DIR, by
 * default the one the package ships beside this module (`pglite-template/pglite-VERSION-fN`), and
 * exits 0, or prints the error and exits 1. Run by the server as a child process when it has no
 * template yet, and by `npm run build` for the package.
 */
import { join } from 'node:path';
import { makeTemplate, pgliteVersion, shippedTemplateDir, templateName } from './pglite-template.ts';

try {
  await makeTemplate(process.argv[2] ?? join(shippedTemplateDir(), templateName(await pgliteVersion())));
} catch (error) {
  process.stderr.write(`make-pglite-template: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
}
