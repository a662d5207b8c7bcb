/**
 * Human-readable rendering of plans and apply results (the JSON forms are the objects themselves).
 *
 * Each change is one line headed by its action and its address (the one `--target` takes), in
 * the colour of its action on a terminal — green create, yellow update, red delete, as Terraform
 * does — with the fields a create sends, the `live -> desired` values an update changes, and what
 * a delete takes along.
 */
import type { AppliedChange, OutcomeCounts } from '../workflows/apply-orchestration.ts';
import { scheduleAddress } from '../plan/addresses.ts';
import type { ScheduleChange } from '../plan/schedules.ts';
import { SENSITIVE } from '../plan/types.ts';
import type { Cascade, Change, ChangeAction, FieldDiff } from '../plan/types.ts';
import type { AppliedScheduleChange } from '../temporal/schedules.ts';

/** The text styles the renderers use (names of `node:util` `styleText` formats). */
export type StyleFormat = 'green' | 'yellow' | 'red' | 'bold';

/** Styles a piece of text; {@link plain} leaves it as it is (not a terminal, `NO_COLOR`). */
export type Style = (format: StyleFormat, text: string) => string;

/** The style of output that is not a terminal. */
export const plain: Style = (_format, text) => text;

const SYMBOL: Record<ChangeAction, string> = { create: '+', update: '~', delete: '-' };
const COLOUR: Record<ChangeAction, StyleFormat> = { create: 'green', update: 'yellow', delete: 'red' };

/** The fields of a create, one a line, aligned: `name: "scout"`. */
function fieldLines(fields: Record<string, unknown>): string[] {
  const entries = Object.entries(fields).filter(([, value]) => value !== undefined);
  const width = Math.max(0, ...entries.map(([key]) => key.length));
  return entries.map(([key, value]) => `${`${key}:`.padEnd(width + 1)} ${JSON.stringify(value)}`);
}

/** A mapping (not a list, not null). */
function isMapping(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** A list of mappings each with a string `name` (an agent's MCP servers): shown by name, `mcp[tracker]`. */
function isNamedList(value: unknown): value is Array<{ name: string }> {
  return Array.isArray(value) && value.every((item) => isMapping(item) && typeof item['name'] === 'string');
}

/** Whether two values read the same in a plan: lists of scalars in any order (as the service treats them), the rest by their JSON. */
function sameShown(a: unknown, b: unknown): boolean {
  if (Array.isArray(a) && Array.isArray(b) && [...a, ...b].every((v) => !isMapping(v) && !Array.isArray(v))) {
    const members = new Set(a.map((v) => JSON.stringify(v)));
    return a.length === b.length && b.every((v) => members.has(JSON.stringify(v)));
  }
  return JSON.stringify(a) === JSON.stringify(b);
}

/**
 * The lines of one value that differs, as deep as both sides are mappings: `tools.team: false ->
 * true`, `tools.mcp[tracker].allow: ["a"] -> ["a","b"]` (a list of named mappings by name, `null`
 * for one side that has no entry of that name); one line for the value otherwise.
 */
function valueLines(path: string, from: unknown, to: unknown): string[] {
  const named = isNamedList(from) && isNamedList(to);
  if (named || (isMapping(from) && isMapping(to))) {
    const entries = (side: unknown) => (named ? (side as Array<{ name: string }>).map((item) => [`[${item.name}]`, item] as const) : Object.entries(side as object).map(([key, value]) => [`.${key}`, value] as const));
    const before = new Map(entries(from));
    const after = new Map(entries(to));
    const keys = [...new Set([...after.keys(), ...before.keys()])];
    return keys.flatMap((key) => valueLines(`${path}${key}`, before.get(key) ?? null, after.get(key) ?? null));
  }
  return sameShown(from, to) ? [] : [`${path}: ${JSON.stringify(from)} -> ${JSON.stringify(to)}`];
}

/**
 * The differing fields of an update, one a line: `instructions: "old" -> "new"`; a field whose
 * two sides are mappings (an agent's `tools`) one line per member that differs, and one line per
 * secret inside it whose value differs, shown as sensitive on both sides
 * (`tools.mcp[tracker].headers.Authorization: "(sensitive)" -> "(sensitive)"`).
 */
function diffLines(diff: Record<string, FieldDiff>): string[] {
  return Object.entries(diff).flatMap(([field, d]) => {
    const lines = isMapping(d.from) && isMapping(d.to) ? valueLines(field, d.from, d.to) : [`${field}: ${JSON.stringify(d.from)} -> ${JSON.stringify(d.to)}`];
    const secrets = (d.sensitiveChanges ?? []).map((path) => `${field}.${path}: ${JSON.stringify(SENSITIVE)} -> ${JSON.stringify(SENSITIVE)}`);
    return [...lines, ...secrets];
  });
}

/** What a delete takes along, in words: `3 agents, 12 threads, 340 messages`. */
export function cascadeText(cascade: Cascade | undefined): string {
  if (!cascade) return '';
  const parts = Object.entries(cascade)
    .filter(([, n]) => n !== undefined && n > 0)
    .map(([what, n]) => `${n} ${(n === 1 ? what.replace(/s$/, '') : what).replace('_', ' ')}`);
  return parts.join(', ');
}

/** A change's head line and detail lines, styled. */
function renderLines(action: ChangeAction, address: string, note: string, details: string[], style: Style): string {
  const head = `  ${style(COLOUR[action], `${SYMBOL[action]} ${action}`)} ${style('bold', address)}${note ? ` ${note}` : ''}`;
  return [head, ...details.map((line) => `      ${line}`)].join('\n');
}

/**
 * One change: `+ create team/review/agent/scout` with the fields it sends; `~ update …` with the
 * fields that change (live -> desired) and, for a rename, the old name; `- delete …` with what goes
 * along.
 */
export function renderChange(change: Change, style: Style = plain): string {
  // The organization's address has no name in it (a definition names one): the line shows it.
  const named = change.kind === 'organization' ? `${change.name} ` : '';
  switch (change.action) {
    case 'create':
      return renderLines('create', change.address, named.trim(), fieldLines(change.fields), style);
    case 'update':
      return renderLines('update', change.address, `${named}${change.renamedFrom !== undefined ? `(renamed from ${change.renamedFrom})` : ''}`.trim(), diffLines(change.diff), style);
    case 'delete': {
      const along = cascadeText(change.cascade);
      return renderLines('delete', change.address, `${named}${along ? `(with ${along})` : ''}`.trim(), [], style);
    }
  }
}

/** One schedule change, in the style of {@link renderChange}: `+ create schedule/nightly` with its fields. */
export function renderScheduleChange(change: ScheduleChange, style: Style = plain): string {
  const { address } = change;
  switch (change.action) {
    case 'create':
      return renderLines('create', address, '', fieldLines(scheduleFields(change.fields ?? {})), style);
    case 'update':
      return renderLines('update', address, '', diffLines(change.diff ?? {}), style);
    case 'delete':
      return renderLines('delete', address, `(${change.id})`, [], style);
  }
}

/** The fields of a schedule worth reading in a plan (the connection and digest are for comparing). */
function scheduleFields(fields: Record<string, unknown>): Record<string, unknown> {
  const { connection: _connection, pipelineDigest: _digest, ...shown } = fields;
  return Object.fromEntries(Object.entries(shown).filter(([, value]) => value !== null));
}

/** Counts of a plan's changes by action, resources and schedules together. */
export function countActions(changes: readonly Change[], schedules: readonly ScheduleChange[] = []): Record<ChangeAction, number> {
  const counts: Record<ChangeAction, number> = { create: 0, update: 0, delete: 0 };
  for (const change of [...changes, ...schedules]) counts[change.action]++;
  return counts;
}

/** The plan as text, Terraform-style: resource changes, then schedule changes, then a summary line. */
export function renderPlan(changes: readonly Change[], schedules: readonly ScheduleChange[] = [], style: Style = plain): string {
  if (changes.length + schedules.length === 0) return 'No changes. The live state matches the definition.';
  const counts = countActions(changes, schedules);
  return [
    ...changes.map((c) => renderChange(c, style)),
    ...schedules.map((c) => renderScheduleChange(c, style)),
    '',
    `Plan: ${counts.create} to create, ${counts.update} to update, ${counts.delete} to delete.`,
  ].join('\n');
}

/** The line printed as an applied change completes: `  team/review/agent/scout: created`. */
export function renderApplied(change: AppliedChange): string {
  return `  ${change.address}: ${change.outcome}`;
}

/** The line printed as an applied schedule change completes: `  schedule/nightly: created`. */
export function renderAppliedSchedule(change: AppliedScheduleChange): string {
  return `  ${scheduleAddress(change.name)}: ${change.outcome}`;
}

/**
 * The closing line of an apply, resources and schedules together; changes made but not listed
 * (`omitted`, very large Temporal applies) are in the counts.
 */
export function renderApplySummary(
  applied: readonly AppliedChange[],
  omitted: OutcomeCounts | undefined,
  schedules: readonly AppliedScheduleChange[] = [],
  verb: 'Apply' | 'Destroy' = 'Apply',
): string {
  const notListed = omitted ? Object.values(omitted).reduce((a, b) => a + b, 0) : 0;
  if (applied.length + schedules.length === 0 && notListed === 0) return 'No changes. The live state matches the definition.';
  const count = (outcome: keyof OutcomeCounts) =>
    applied.filter((c) => c.outcome === outcome).length + schedules.filter((s) => s.outcome === outcome).length + (omitted?.[outcome] ?? 0);
  const more = notListed > 0 ? ` (${notListed} of them not listed above)` : '';
  return `${verb} complete: ${count('created')} created, ${count('updated')} updated, ${count('deleted')} deleted, ${count('unchanged')} already in place${more}.`;
}

/** `1 human`, `2 humans`, `0 edges`: a count with its noun, plural unless it is one. */
export function counted(n: number, noun: string): string {
  return `${n} ${n === 1 ? noun : `${noun}s`}`;
}
