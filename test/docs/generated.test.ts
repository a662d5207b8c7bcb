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

  it('the definitions reference heads each kind of entry of steps by what it is and where it may stand, and each part by its place in the entry', () => {
    const headings = renderDefinitionReference().split('\n').filter((line) => line.startsWith('#### '));
    for (const kind of ['a group of steps run in parallel', 'a loop', 'a map', 'a sub-pipeline', 'a sleep']) {
      expect(headings).toContain(`#### Keys of ${kind}: an entry of \`steps\` in a pipeline, a loop or a map`);
    }
    expect(headings).toContain('#### Keys of a step: an entry of `steps` in a pipeline, a loop or a map, or of `parallel`');
    expect(headings).toEqual(expect.arrayContaining(['#### Keys of `map` in a map', '#### Keys of `run` in a sub-pipeline', '#### Keys of `reply` in a step']));
    // No heading names the one nesting the walk met an entry in first.
    expect(headings.filter((h) => /loop\.steps|map\.steps/.test(h))).toEqual([]);
  });

  it('the definitions reference shows lists as the examples of items (CEL that yields a list) and conditions as those of when and until', async () => {
    const { evaluateCondition, evaluateList } = await import('../../definitions/expressions.ts');
    const withExamples: Array<{ description: string; examples: string[] }> = [];
    const walk = (node: unknown): void => {
      if (Array.isArray(node)) node.forEach(walk);
      else if (node && typeof node === 'object') {
        const { description, examples } = node as { description?: unknown; examples?: unknown };
        if (typeof description === 'string' && Array.isArray(examples)) withExamples.push({ description, examples: examples as string[] });
        Object.values(node).forEach(walk);
      }
    };
    walk(JSON.parse(committed('definitions/teamctl.schema.json')));
    const examplesOf = (description: string) => withExamples.filter((n) => n.description.startsWith(description)).map((n) => n.examples);
    const variables = { steps: { plan: { value: { files: ['a.md', 'b.md'] } }, classify: { value: { urgent: true } }, verdict: { value: 'approve' } }, inputs: {} };
    const items = examplesOf('CEL expression yielding the list of items');
    expect(items.length).toBeGreaterThan(0);
    for (const example of items.flat()) expect(Array.isArray(evaluateList(example, variables)), example).toBe(true);
    const conditions = examplesOf('CEL condition');
    expect(conditions.length).toBeGreaterThan(0);
    for (const example of conditions.flat()) expect(typeof evaluateCondition(example, variables), example).toBe('boolean');
  });

  it('the definitions reference says what a rename keeps for each kind: threads for teams, agents and humans, the secret and delivery log for webhooks', () => {
    const reference = renderDefinitionReference();
    const renamedRow = (heading: string) => {
      const table = reference.slice(reference.indexOf(heading));
      return table.slice(0, table.indexOf('\n#### ')).split('\n').find((line) => line.startsWith('| `renamedFrom` |')) ?? '';
    };
    expect(renamedRow('#### Keys of `organization.webhooks[]`')).toContain('(its secret and delivery log kept)');
    expect(renamedRow('#### Keys of `organization.webhooks[]`')).not.toContain('threads');
    for (const heading of ['#### Keys of `teams[]`', '#### Keys of `teams[].agents[]`', '#### Keys of `teams[].humans[]`']) expect(renamedRow(heading)).toContain('(threads kept)');
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
