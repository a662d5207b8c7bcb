/**
 * docs/cli.md documents every command and flag both programs have, and nothing they do not: the
 * tests walk the commander trees of `teamctl` (`buildProgram`) and `acs-server`
 * (`buildAcsServerProgram`) without running them, and look each command up in the reference.
 *
 * - Every visible command without subcommands has a heading naming it in a code span
 *   (`### \`teamctl thread open\``); a program's own flags belong to its top section
 *   (`## \`teamctl\``).
 * - Every flag of a command (long and short) and every choice of a flag appears in the command's
 *   section or in a section of cli.md that section links to (the shared connection flags).
 * - Every flag in the first column of a section's flag table exists on that command.
 * - Every exit code of teamctl and every error code teamctl raises is explained; so is every
 *   service error code (with its status) and every MCP tool in docs/api.md.
 */
import type { Command } from 'commander';
import { describe, expect, it } from 'vitest';
import { McpToolNames } from '../../api/mcp-tools.ts';
import { ExitCodes } from '../../cli/errors.ts';
import { buildProgram } from '../../cli/program.ts';
import { ErrorCatalogue, ToolkitErrorCodes } from '../../errors/catalogue.ts';
import { buildAcsServerProgram } from '../../service/server-cli.ts';
import { headingByAnchor, readPage, sectionText, type Heading, type Page } from './markdown.ts';

const cli = readPage('docs/cli.md');
const api = readPage('docs/api.md');

/** A command of a tree, with its full name (`teamctl thread open`). */
interface Entry {
  path: string;
  command: Command;
}

/** Every visible command of a program, the program itself first. */
function commandsOf(program: Command): Entry[] {
  const entries: Entry[] = [];
  const walk = (command: Command, prefix: string) => {
    if ((command as Command & { _hidden?: boolean })._hidden) return;
    const path = prefix ? `${prefix} ${command.name()}` : command.name();
    entries.push({ path, command });
    for (const sub of command.commands) walk(sub, path);
  };
  walk(program, '');
  return entries;
}

const programs = {
  teamctl: await buildProgram({ stdout: () => {}, stderr: () => {}, env: {}, isTTY: false }, async () => {}),
  'acs-server': buildAcsServerProgram(async () => {}),
};

/** The heading of `path` in cli.md: one naming it in a code span. */
function headingOf(path: string): Heading | undefined {
  return cli.headings.find((h) => h.codeSpans.includes(path));
}

/** The text documenting a command: its section, plus the sections of cli.md it links to. */
function documentedText(page: Page, heading: Heading): string {
  const own = sectionText(page, heading);
  const linked = [...own.matchAll(/\]\(#([^)]+)\)/g)].map((m) => headingByAnchor(page, m[1]!)).filter((h): h is Heading => h !== undefined);
  return [own, ...linked.map((h) => sectionText(page, h))].join('\n');
}

/** Whether `flag` (`--file`, `-f`) is written in `text` as a flag, not as part of a longer one. */
const mentions = (text: string, flag: string) => new RegExp(`(?<![\\w-])${flag.replace(/[-]/g, '\\-')}(?![\\w-])`).test(text);

/** The flags that fill the first column of the flag tables of a section (`| \`--grace DURATION\` |`). */
function tableFlags(text: string): string[] {
  const flags: string[] = [];
  for (const line of text.split('\n')) {
    const first = /^\|([^|]*)\|/.exec(line)?.[1] ?? '';
    for (const span of first.matchAll(/`(-{1,2}[A-Za-z][\w-]*)/g)) flags.push(span[1]!);
  }
  return flags;
}

/** Flags a command accepts: its own, its ancestors' (global flags), and commander's help. */
function acceptedFlags(command: Command): Set<string> {
  const flags = new Set(['--help', '-h']);
  for (let c: Command | null = command; c; c = c.parent) {
    for (const option of c.options) {
      if (option.long) flags.add(option.long);
      if (option.short) flags.add(option.short);
    }
  }
  return flags;
}

describe('docs: the CLI reference', () => {
  for (const [name, program] of Object.entries(programs)) {
    for (const { path, command } of commandsOf(program)) {
      const leaf = command.commands.length === 0;
      if (!leaf && command.options.length === 0) continue;

      it(`docs/cli.md documents \`${path}\` and each of its flags`, () => {
        const heading = headingOf(path);
        expect(heading, `docs/cli.md needs a heading naming \`${path}\``).toBeDefined();
        const text = documentedText(cli, heading!);
        const missing: string[] = [];
        for (const option of command.options) {
          for (const flag of [option.long, option.short]) if (flag && !mentions(text, flag)) missing.push(flag);
          for (const choice of option.argChoices ?? []) if (!text.includes(choice)) missing.push(`${option.long} ${choice}`);
        }
        for (const argument of command.registeredArguments) for (const choice of argument.argChoices ?? []) if (!text.includes(choice)) missing.push(`<${argument.name()}> ${choice}`);
        expect(missing, `not documented in the section of \`${path}\` in docs/cli.md`).toEqual([]);
      });

      if (leaf && command !== program) {
        it(`docs/cli.md documents no flag that \`${path}\` does not have`, () => {
          const heading = headingOf(path);
          expect(heading, `docs/cli.md needs a heading naming \`${path}\``).toBeDefined();
          const accepted = acceptedFlags(command);
          const stale = tableFlags(sectionText(cli, heading!)).filter((flag) => !accepted.has(flag));
          expect(stale, `flags in the table of \`${path}\` that it does not accept`).toEqual([]);
        });
      }
    }

    it(`docs/cli.md has a section for the program \`${name}\``, () => {
      expect(headingOf(name)?.depth).toBe(2);
    });
  }

  it('every exit code of teamctl is explained', () => {
    const section = sectionText(cli, headingByAnchor(cli, 'exit-codes')!);
    for (const code of Object.values(ExitCodes)) expect(section).toMatch(new RegExp(`^\\| ${code} \\|`, 'm'));
  });

  it('every code teamctl raises itself is explained, with when it happens and its hint, and no other', () => {
    const section = sectionText(cli, headingByAnchor(cli, 'errors-and-hints')!);
    for (const code of Object.keys(ToolkitErrorCodes)) expect(section).toMatch(new RegExp(`^\\| \`${code}\` \\| [^|]+ \\| [^|]+ \\|$`, 'm'));
    const listed = [...section.matchAll(/^\| `([a-z_]+)` \|/gm)].map((m) => m[1]);
    expect(listed.filter((code) => !Object.hasOwn(ToolkitErrorCodes, code!))).toEqual([]);
  });

  it('every error code of the service is in docs/api.md with its status, and no other', () => {
    const section = sectionText(api, headingByAnchor(api, 'errors')!);
    for (const [code, { status }] of Object.entries(ErrorCatalogue)) expect(section).toMatch(new RegExp(`^\\| ${status} \\| \`${code}\` \\|`, 'm'));
    const listed = [...section.matchAll(/^\| \d{3} \| `([a-z_]+)` \|/gm)].map((m) => m[1]);
    expect(listed.filter((code) => !Object.hasOwn(ErrorCatalogue, code!))).toEqual([]);
  });

  it('every MCP tool is in the tool table of docs/api.md', () => {
    const section = sectionText(api, headingByAnchor(api, 'tools')!);
    for (const tool of Object.keys(McpToolNames)) expect(section).toMatch(new RegExp(`^\\| \`${tool}\` \\|`, 'm'));
  });

  it('a flag missing from a section is noticed (the check itself)', () => {
    const text = '### `teamctl x`\n\n| flag | what |\n|---|---|\n| `--file-size N` | … |\n';
    expect(mentions(text, '--file')).toBe(false);
    expect(mentions(text, '--file-size')).toBe(true);
    expect(mentions('`-f`, `--file PATH`', '-f')).toBe(true);
    expect(tableFlags(text)).toEqual(['--file-size']);
  });
});
