/**
 * The README and the user guide stand on their own inside the repository: every relative link
 * resolves to a file of the clone, every `#anchor` to a heading of its page (as GitHub names
 * headings), and no page points at files outside the clone or at a contract the repository does
 * not hold.
 */
import { existsSync, readdirSync, statSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readPage, root, type Page } from './markdown.ts';

/** The pages a user reads: the README, every page of docs/, and the service's own README. */
const pages = ['README.md', ...readdirSync(resolve(root, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`), 'service/README.md'];

/** Whether a link leaves the repository's pages: a URL with a scheme (`https:`, `mailto:`) or `//host`. */
const external = (href: string) => /^[a-z][a-z0-9+.-]*:/i.test(href) || href.startsWith('//');

const cache = new Map<string, Page>();
const page = (file: string) => cache.get(file) ?? cache.set(file, readPage(file)).get(file)!;

/** The problems of one page's links: each as `link: why`. */
function brokenLinks(file: string): string[] {
  const problems: string[] = [];
  for (const href of page(file).links) {
    if (external(href)) continue;
    const [pathPart, anchor] = href.split('#', 2) as [string, string | undefined];
    const target = pathPart === '' ? resolve(root, file) : resolve(root, dirname(file), decodeURI(pathPart));
    const inside = relative(root, target);
    if (inside.startsWith('..') || (inside === '' && pathPart !== '')) {
      problems.push(`${href}: points outside the repository`);
      continue;
    }
    if (!existsSync(target)) {
      problems.push(`${href}: ${inside} does not exist`);
      continue;
    }
    if (anchor === undefined || anchor === '') continue;
    if (statSync(target).isDirectory() || !target.endsWith('.md')) {
      problems.push(`${href}: an anchor into a file that is not Markdown`);
      continue;
    }
    const targetPage = page(inside);
    if (!targetPage.headings.some((h) => h.anchor === anchor)) problems.push(`${href}: ${inside} has no heading #${anchor}`);
  }
  return problems;
}

describe('docs: links', () => {
  it('the user guide has its index and the pages the README promises', () => {
    for (const file of ['docs/README.md', 'docs/definitions.md', 'docs/cli.md', 'docs/operating-acs-server.md', 'docs/api.md']) expect(pages).toContain(file);
  });

  for (const file of pages) {
    it(`${file}: every relative link and anchor resolves inside the repository`, () => {
      expect(brokenLinks(file)).toEqual([]);
    });

    it(`${file}: refers to nothing outside the clone`, () => {
      const text = page(file).text;
      expect(text).not.toMatch(/\.\.\/shared|shared\/(docs|seed)|service-api\.md|interface-spec/);
      expect(text, 'say what is meant instead of citing a contract section').not.toMatch(/contract §/);
    });
  }

  it('every page of docs/ is reachable from the guide index', () => {
    const index = page('docs/README.md').links.filter((href) => !external(href)).map((href) => href.split('#')[0]);
    for (const file of pages.filter((f) => f.startsWith('docs/') && f !== 'docs/README.md')) expect(index).toContain(file.slice('docs/'.length));
  });

  it('a link to a missing file or heading is reported (the check itself)', () => {
    cache.set('fixture.md', { file: 'fixture.md', text: '', headings: [], links: ['docs/cli.md#no-such-heading', 'docs/nope.md', '../outside.md', 'docs/cli.md#exit-codes', 'https://example.com/x'] });
    expect(brokenLinks('fixture.md')).toEqual([
      'docs/cli.md#no-such-heading: docs/cli.md has no heading #no-such-heading',
      'docs/nope.md: docs/nope.md does not exist',
      '../outside.md: points outside the repository',
    ]);
    cache.delete('fixture.md');
  });
});
