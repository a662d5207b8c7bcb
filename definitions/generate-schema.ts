/**
 * Generates `definitions/teamctl.schema.json`, the JSON Schema editors use to complete and check
 * definition files (a file opts in with `# yaml-language-server: $schema=…`).
 *
 * Run as a script (`npm run schema`) to write the file; the tests fail while it is stale.
 */
import { writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { z } from 'zod';
import { DefinitionSchema } from './schema.ts';

/** Where the generated schema is committed. */
export const JSON_SCHEMA_PATH = fileURLToPath(new URL('./teamctl.schema.json', import.meta.url));

/**
 * The JSON Schema of a definition file, from {@link DefinitionSchema}.
 *
 * Draft-07, the draft yaml-language-server supports best; the input side of the schema (fields
 * with defaults are optional), so that what an editor accepts is what `parseDefinition` accepts
 * as far as a JSON Schema can say (cross-field rules are not expressible). Secret references are
 * constrained by a `pattern` allowing only `${env:NAME}`. Output: a plain JSON object.
 */
export function buildJsonSchema(): Record<string, unknown> {
  const generated = z.toJSONSchema(DefinitionSchema, { target: 'draft-7', io: 'input' });
  const { $schema, ...rest } = generated;
  // Order for readers: $schema, then what the file is, then the generated body.
  return {
    $schema,
    title: 'teamctl definition',
    ...rest,
  };
}

/** The file text: two-space indented JSON with a trailing newline. */
export function renderJsonSchema(): string {
  return `${JSON.stringify(buildJsonSchema(), null, 2)}\n`;
}

if (import.meta.main) {
  await writeFile(JSON_SCHEMA_PATH, renderJsonSchema());
  console.log(`wrote ${JSON_SCHEMA_PATH}`);
}
