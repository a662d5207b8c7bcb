/**
 * Reading the repository's Markdown as GitHub renders it, for the docs tests: headings with the
 * anchors GitHub gives them (github-slugger, duplicates numbered), the section each heading opens,
 * and every link outside code (marked's lexer, so a `](x)` inside a code block or span is not one).
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import GithubSlugger from 'github-slugger';
import { marked, type Token, type Tokens } from 'marked';

/** The repository's root. */
export const root = resolve(import.meta.dirname, '../..');

/** A heading: its level, its text as rendered, the code spans in it, its anchor, where its section lies. */
export interface Heading {
  depth: number;
  text: string;
  codeSpans: string[];
  anchor: string;
  /** Offsets in the page: the heading's start, and the end of its section (the next heading of the same or a higher level). */
  start: number;
  end: number;
}

/** A page of Markdown, read and lexed once. */
export interface Page {
  file: string;
  text: string;
  headings: Heading[];
  /** Link targets outside code, as written (`docs/cli.md#contexts`, `#exit-codes`, `https://…`). */
  links: string[];
}

/** The rendered text of inline tokens: code spans and link texts count, markup does not. */
function plain(tokens: Token[] | undefined): string {
  return (tokens ?? [])
    .map((t) => {
      if (t.type === 'codespan' || t.type === 'text' || t.type === 'escape') return 'tokens' in t && t.tokens ? plain(t.tokens) : (t as Tokens.Text).text;
      if (t.type === 'html') return '';
      return 'tokens' in t ? plain(t.tokens) : '';
    })
    .join('');
}

/** Reads and lexes `file` (relative to the repository's root). */
export function readPage(file: string): Page {
  const text = readFileSync(resolve(root, file), 'utf8');
  const tokens = marked.lexer(text);
  const slugger = new GithubSlugger();
  const headings: Heading[] = [];
  let offset = 0;
  for (const token of tokens) {
    if (token.type === 'heading') {
      const heading = token as Tokens.Heading;
      const rendered = plain(heading.tokens);
      const codeSpans = heading.tokens.filter((t) => t.type === 'codespan').map((t) => (t as Tokens.Codespan).text);
      headings.push({ depth: heading.depth, text: rendered, codeSpans, anchor: slugger.slug(rendered), start: offset, end: text.length });
    }
    offset += token.raw.length;
  }
  for (const [i, heading] of headings.entries()) {
    const next = headings.slice(i + 1).find((h) => h.depth <= heading.depth);
    if (next) heading.end = next.start;
  }
  const links: string[] = [];
  marked.walkTokens(tokens, (token) => {
    if (token.type === 'link' || token.type === 'image') links.push((token as Tokens.Link).href);
  });
  return { file, text, headings, links };
}

/** The text of a heading's section, the heading included. */
export function sectionText(page: Page, heading: Heading): string {
  return page.text.slice(heading.start, heading.end);
}

/** The heading with this anchor. */
export function headingByAnchor(page: Page, anchor: string): Heading | undefined {
  return page.headings.find((h) => h.anchor === anchor);
}
