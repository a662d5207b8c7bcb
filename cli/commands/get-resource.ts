/**
 * The frame of `teamctl get`: one {@link GetResource} per kind of thing it lists, added to the
 * `get` command by one call of {@link addGetResource}. A resource says how to read its rows and
 * which columns its table has; the frame gives every one the same flags (`--org`, `--team`,
 * `-o table|json|yaml`, the connection flags) and the same three outputs.
 */
import type { Command } from 'commander';
import { Option } from 'commander';
import { stringify } from 'yaml';
import type { AcsClient } from '../../client/acs-client.ts';
import { keyringClient, resolveConnection } from '../context.ts';
import type { ConnectionFlags } from '../context.ts';
import { ExitCodes } from '../errors.ts';
import type { CliIo } from '../io.ts';
import { printable } from '../printable.ts';
import { connectionOptions } from './plan-apply.ts';
import type { Runner } from './runner.ts';

/** Output formats of `get`. */
export const GetFormats = { table: 'table', json: 'json', yaml: 'yaml' } as const;
export type GetFormat = keyof typeof GetFormats;

/** What narrows a listing: an organization and a team, by name. */
export interface GetFilter {
  org?: string | undefined;
  team?: string | undefined;
}

/** One column of a table: its header and the cell of a row. */
export interface Column<Row> {
  header: string;
  cell: (row: Row) => string;
  /** Left out when every row has the same value in it (the ORG column when one organization is listed). */
  dropWhenUniform?: boolean;
}

/** One kind of thing `teamctl get` lists. */
export interface GetResource<Row> {
  /** The subcommand: `teams`. */
  name: string;
  /** Other names it answers to: `team`. */
  aliases?: string[];
  description: string;
  /** Reads the rows (records as the service returns them, with the names of what holds them). */
  read(client: AcsClient, filter: GetFilter): Promise<Row[]>;
  columns: Array<Column<Row>>;
  /** A line under the table that explains a column whose cells need it (printed on stderr, so stdout keeps the table alone). */
  note?: string;
}

/** The rows as an aligned table, headers in capitals, as kubectl prints them. */
export function renderTable<Row>(rows: readonly Row[], columns: ReadonlyArray<Column<Row>>): string {
  const shown = columns.filter((c) => !(c.dropWhenUniform && rows.length > 0 && new Set(rows.map(c.cell)).size === 1));
  // Cells are made printable before they are measured, so a name with escapes stays aligned.
  const cells = [shown.map((c) => c.header), ...rows.map((row) => shown.map((c) => printable(c.cell(row))))];
  const widths = shown.map((_, i) => Math.max(...cells.map((line) => line[i]?.length ?? 0)));
  return cells.map((line) => line.map((cell, i) => (i === line.length - 1 ? cell : cell.padEnd(widths[i] ?? 0))).join('   ')).join('\n');
}

/**
 * Adds `get <resource.name>` to the `get` command: `--org NAME`, `--team NAME`, `-o
 * table|json|yaml` (default table) and the connection flags. The table says so on stderr when
 * there is nothing to list, and prints the resource's note (on stderr) under it; JSON and YAML print the rows as records. Errors: those of `read`,
 * `invalid_usage` for a flag.
 */
export function addGetResource<Row>(get: Command, resource: GetResource<Row>, io: CliIo, run: Runner): void {
  const command = get
    .command(resource.name)
    .aliases(resource.aliases ?? [])
    .description(resource.description)
    .option('--org <name>', 'only this organization')
    .option('--team <name>', 'only this team')
    .addOption(new Option('-o, --output <format>', 'output format').choices(Object.values(GetFormats)).default(GetFormats.table));
  connectionOptions(command).action((opts: ConnectionFlags & GetFilter & { output: GetFormat }) =>
    run(async () => {
      const client = keyringClient(resolveConnection(opts, io.env), io.env);
      const rows = await resource.read(client, { org: opts.org, team: opts.team });
      if (opts.output === GetFormats.json) io.stdout(JSON.stringify(rows, null, 2));
      else if (opts.output === GetFormats.yaml) io.stdout(stringify(rows, { lineWidth: 0 }));
      else if (rows.length === 0) io.stderr(`No ${resource.name} found.`);
      else {
        io.stdout(renderTable(rows, resource.columns));
        if (resource.note) io.stderr(resource.note);
      }
      return ExitCodes.ok;
    }),
  );
}
