/**
 * A remote A2A agent's `a2a` (contract §12) in the plan: how the live one (the service's form,
 * `{url, header_fingerprints}`) compares with the definition's (header values as templates such
 * as `Bearer ${env:SCOUT_TOKEN}`), and how a plan shows it (every header value as
 * {@link SENSITIVE}).
 *
 * Header values are compared as MCP servers' are (`agent-tools.ts`): the read activities resolve
 * the templates and check them against the live fingerprints, and put their verdicts in the
 * agent's `headerMatches` under {@link A2A_HEADERS}. Pure, deterministic and free of Node
 * imports: the apply workflow plans with it in Temporal's sandbox.
 */
import type { A2aParticipant } from '../api/remote-a2a.ts';
import { SENSITIVE } from './types.ts';
import type { DesiredA2a, FieldDiff } from './types.ts';

/**
 * The key of a remote A2A agent's own headers in `HeaderRefs` and `HeaderMatches` (beside its MCP
 * servers' names, which match `^[a-z][a-z0-9-]*$` and so can never be it).
 */
export const A2A_HEADERS = '@a2a';

/** `a2a` as plans show it, live or desired: its URL and its header names, each value {@link SENSITIVE}. */
export interface ShownA2a {
  url: string;
  headers: Record<string, typeof SENSITIVE>;
}

/** Header names → {@link SENSITIVE}, in the order given. */
function hidden(names: readonly string[]): Record<string, typeof SENSITIVE> {
  return Object.fromEntries(names.map((name) => [name, SENSITIVE]));
}

/** Desired `a2a` as plans show it (header values hidden). Raises nothing. */
export function shownA2a(a2a: DesiredA2a): ShownA2a {
  return { url: a2a.url, headers: hidden(Object.keys(a2a.headers)) };
}

/** Live `a2a` as plans show it: `header_fingerprints` become `headers`, each value hidden. Raises nothing. */
export function shownLiveA2a(a2a: A2aParticipant): ShownA2a {
  return { url: a2a.url, headers: hidden(Object.keys(a2a.header_fingerprints)) };
}

/** The same header names, without regard to order. */
function sameNames(a: readonly string[], b: readonly string[]): boolean {
  const names = new Set(a);
  return a.length === b.length && b.every((name) => names.has(name));
}

/**
 * The drift of an agent's `a2a`, or undefined when the live one is the desired one: the URL, the
 * header names, and each header value by `matches` (header name → whether the live value is the
 * desired one; a header not judged there counts as the same: it could not be compared). Input:
 * the live `a2a` (undefined: a service that does not return it, read as null), the desired one,
 * and the verdicts. Output: `{from, to}` as plans show them, with `sensitiveChanges`
 * (`headers.NAME`) naming the header values that differ. Raises nothing.
 */
export function a2aDiff(live: A2aParticipant | null | undefined, desired: DesiredA2a | null, matches: Record<string, boolean> | undefined): FieldDiff | undefined {
  const current = live ?? null;
  if (current === null || desired === null) {
    return current === desired ? undefined : { from: current && shownLiveA2a(current), to: desired && shownA2a(desired) };
  }
  const sensitiveChanges = Object.keys(desired.headers)
    .filter((header) => Object.hasOwn(current.header_fingerprints, header) && matches?.[header] === false)
    .map((header) => `headers.${header}`);
  const same = current.url === desired.url && sameNames(Object.keys(current.header_fingerprints), Object.keys(desired.headers)) && sensitiveChanges.length === 0;
  if (same) return undefined;
  return { from: shownLiveA2a(current), to: shownA2a(desired), ...(sensitiveChanges.length > 0 ? { sensitiveChanges } : {}) };
}
