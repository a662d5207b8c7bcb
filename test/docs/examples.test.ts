/**
 * The definitions the README and the user guide show are ones a user can copy: every YAML block
 * with a top-level `organization:` is a whole definition file and passes `teamctl validate`'s
 * checks as printed. Blocks without one are fragments (a pipeline, a schedule, a contexts file)
 * and are not read here.
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
