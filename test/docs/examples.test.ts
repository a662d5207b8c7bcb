/**
 * The definitions the README and the user guide show are ones a user can copy: every YAML block
 * with a top-level `organization:` is a whole definition file and passes `teamctl validate`'s
 * checks as printed. Blocks without one are fragments (a pipeline, a schedule, a contexts file)
 * and are not read here, except on docs/pipelines.md: there every `pipelines:` block is one
 * example of a construct, and validates appended to the page's first whole definition (the team
 * they run on).
 */
import { readdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { marked, type Token, type Tokens } from 'marked';
import { parseDefinition } from '../../definitions/index.ts';
import { readPage, root } from './markdown.ts';

const pages = ['README.md', ...readdirSync(resolve(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** Every fenced code block of a page, nested ones (in lists, quotes) included. */
function codeBlocks(tokens: Token[]): Tokens.Code[] {
  return tokens.flatMap((t) => {
    const children = ('tokens' in t && t.tokens) || ('items' in t && (t.items as Token[])) || [];
    return t.type === 'code' ? [t as Tokens.Code] : codeBlocks(children as Token[]);
  });
}

const definitions = pages.flatMap((file) =>
  codeBlocks(marked.lexer(readPage(file).text))
    .filter((block) => block.lang === 'yaml' && /^organization:/m.test(block.text))
    .map((block, index) => ({ file, index, text: block.text })),
);

describe('docs: the definitions shown', () => {
  it('docs: the README and the guide show whole definitions to copy (the check below has something to read)', () => {
    expect(definitions.map((d) => d.file)).toEqual(expect.arrayContaining(['README.md', 'docs/definitions.md', 'docs/agents.md', 'docs/lifecycle.md']));
  });

  it.each(definitions.map((d) => [`${d.file} #${d.index + 1}`, d] as const))('docs: the definition in %s validates as printed', (_name, d) => {
    expect(() => parseDefinition(d.text, d.file)).not.toThrow();
  });
});

const pipelinesPage = codeBlocks(marked.lexer(readPage('docs/pipelines.md').text)).filter((block) => block.lang === 'yaml');
const team = pipelinesPage.find((block) => /^organization:/m.test(block.text))!;
const constructs = pipelinesPage.filter((block) => /^pipelines:/m.test(block.text) && !/^organization:/m.test(block.text));

describe('docs: the pipelines taught', () => {
  it('docs/pipelines.md: one example of each construct (a typed reply, when, loop, map, run, sleep, onError), on the team the page shows', () => {
    const all = constructs.map((block) => block.text).join('\n');
    for (const construct of ['reply:', 'when:', 'loop:', 'map:', 'run:', 'sleep:', 'onError:', 'parallel:']) expect(all, construct).toContain(construct);
    expect(team.text).not.toMatch(/^pipelines:/m);
  });

  it.each(constructs.map((block, index) => [`#${index + 1}`, block.text] as const))('docs/pipelines.md: example %s validates on the page\'s team', (_name, text) => {
    expect(() => parseDefinition(`${team.text}\n${text}`, 'docs/pipelines.md')).not.toThrow();
  });
});
