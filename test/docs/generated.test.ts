/**
 * The generated parts of the user guide match the code they come from: the definitions reference
 * (docs/definitions.md) is what the Zod schemas give now, and the route tables (docs/api.md) are
 * what acs-server's OpenAPI document gives now. `npm run docs:generate` rewrites them; these tests
 * fail until it has run after a change, as the JSON Schema's own staleness test does.
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { renderRouteTables, servedOpenApiDocument } from '../../scripts/docs/api-reference.ts';
import { renderDefinitionReference, undescribedKeys } from '../../scripts/docs/definition-reference.ts';
import { readSection, writeSection } from '../../scripts/docs/sections.ts';
import { generatedSections } from '../../scripts/generate-docs.ts';
import { root } from './markdown.ts';

const committed = (file: string) => readFileSync(resolve(root, file), 'utf8');

describe('docs: generated sections', () => {
  for (const section of generatedSections) {
    it(`${section.file}: the ${section.name} section is up to date with the code`, async () => {
      const text = committed(section.file);
      expect(readSection(text, section.name, section.file), `${section.file} is stale: run \`npm run docs:generate\``).toBe(
        (await section.render()).replace(/^\n+|\n+$/g, ''),
      );
    });
  }

  it('the definitions reference has a row for every key of the JSON Schema, each with a description', () => {
    const reference = renderDefinitionReference();
    for (const key of ['apiVersion', 'providerKeys', 'maxTokensPerDay', 'awaitReply', 'parallel', 'catchupWindow', 'overlap']) {
      expect(reference).toContain(`| \`${key}\` |`);
    }
    expect(undescribedKeys(), 'give these keys a .describe() text in the Zod schema').toEqual([]);
  });

  it('the definitions reference names a new key as soon as the schema has it', () => {
    const schema = {
      type: 'object',
      description: 'A file',
      required: ['name'],
      properties: {
        name: { type: 'string', minLength: 1, maxLength: 100, description: 'A name' },
        extra: { type: 'boolean', default: false, description: 'A new switch' },
      },
    };
    expect(renderDefinitionReference(schema)).toContain('| `extra` | boolean | default `false` | A new switch |');
    expect(undescribedKeys({ type: 'object', properties: { bare: { type: 'string' } } })).toEqual(['bare']);
  });

  it('the route tables list every operation of the served OpenAPI document', async () => {
    const document = await servedOpenApiDocument();
    const tables = renderRouteTables(document);
    for (const [path, methods] of Object.entries(document.paths)) {
      for (const method of Object.keys(methods)) expect(tables).toMatch(new RegExp(`\\| \`${method.toUpperCase()}\` \\| \`${path.replace(/[{}.$]/g, '\\$&')}\``));
    }
  });

  it('the served OpenAPI document speaks for itself: no contract sections or files outside the repository', async () => {
    const text = JSON.stringify(await servedOpenApiDocument());
    expect(text).not.toMatch(/contract §|service-api\.md|interface-spec|\.\.\/shared/);
  });

  it('a generated section is written between its markers and nowhere else', () => {
    const page = ['# Page', '', 'prose before', '', '<!-- BEGIN GENERATED x: npm run docs:generate writes this part; do not edit it by hand -->', 'old', '<!-- END GENERATED x -->', '', 'prose after', ''].join('\n');
    const written = writeSection(page, 'x', 'new table', 'page.md');
    expect(readSection(written, 'x', 'page.md')).toBe('new table');
    expect(written.startsWith('# Page\n\nprose before\n\n')).toBe(true);
    expect(written.endsWith('\n\nprose after\n')).toBe(true);
    expect(() => writeSection('# no markers', 'x', 'new', 'page.md')).toThrow(/markers for the generated section x/);
  });
});
