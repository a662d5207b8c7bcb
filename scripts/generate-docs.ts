/**
 * `npm run docs:generate` (also run by `npm run schema`): writes the generated sections of the
 * user guide from the code, so the reference parts of `docs/` cannot drift from it:
 *
 * - docs/definitions.md, `definitions-reference`: every key of a definition file, from the Zod
 *   schemas (through the JSON Schema of `definitions/teamctl.schema.json`);
 * - docs/api.md, `api-routes`: every route, from the OpenAPI document acs-server serves.
 *
 * The prose around them is hand-written (see scripts/docs/sections.ts for the markers).
 * test/docs/generated.test.ts fails while a committed section differs from what this writes.
 */
import { readFile, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { renderRouteTables, servedOpenApiDocument } from './docs/api-reference.ts';
import { renderDefinitionReference } from './docs/definition-reference.ts';
import { writeSection } from './docs/sections.ts';

/** One generated section: the page (relative to the repository root), its name, how to render it. */
export interface GeneratedSection {
  file: string;
  name: string;
  render: () => Promise<string>;
}

/** Every generated section of the docs. */
export const generatedSections: readonly GeneratedSection[] = [
  { file: 'docs/definitions.md', name: 'definitions-reference', render: async () => renderDefinitionReference() },
  { file: 'docs/api.md', name: 'api-routes', render: async () => renderRouteTables(await servedOpenApiDocument()) },
];

/** The absolute path of a page of the repository. */
export function repoPath(file: string): string {
  return fileURLToPath(new URL(`../${file}`, import.meta.url));
}

if (import.meta.main) {
  for (const section of generatedSections) {
    const path = repoPath(section.file);
    const text = await readFile(path, 'utf8');
    const next = writeSection(text, section.name, await section.render(), section.file);
    if (next !== text) await writeFile(path, next);
    console.log(`${section.file}: ${section.name} ${next === text ? 'up to date' : 'written'}`);
  }
}
