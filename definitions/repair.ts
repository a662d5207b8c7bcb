/**
 * Parsing a part of a definition that failed its schema *as if* its harmless mistakes were
 * fixed, so that `validate` can still check everything else about it (`partial.ts`): a loop with
 * `maxIterations: 0` still has its expressions, participants and reply schema checked.
 *
 * Only mistakes whose fix cannot change what the other checks find are repaired, and only for
 * those checks (the schema's problems are reported as they are): a key the schema does not know
 * is dropped; a number out of its range is moved to the nearest bound and a fraction rounded,
 * bounds read from the schema's own issue; an optional setting that names nothing (a timeout, a
 * wait mode, a description…) goes back to its default; a sleep's length becomes any valid one; a
 * reply schema that is not a mapping becomes `{}` (one that allows anything, so nothing is
 * guessed about the reply's type). A part with any other problem — a name, an id, a
 * participant, a step's text — is not repaired: the caller leaves it out, as before.
 */
import type { z } from 'zod';

type Issue = z.core.$ZodIssue;

/** Optional keys whose value names nothing another check reads: left out, they take their default. */
const DROPPABLE = new Set([
  'timeout',
  'reconcileEvery',
  'waitMode',
  'onError',
  'description',
  'subject',
  'output',
  'awaitReply',
  'catchupWindow',
  'overlap',
  'timezone',
  'paused',
  'status',
  'instructions',
  'email',
  'protect',
  'askTimeout',
  'toolTimeout',
  'maxTokensPerDay',
]);

/** Required keys that may take any valid value for the other checks' sake. */
const STAND_INS: Record<string, unknown> = { for: '1m' };

/** The issues of the union member that came closest (as the problems report them), with whole paths. */
function flatten(issues: readonly Issue[]): Issue[] {
  return issues.flatMap((issue) => {
    if (issue.code !== 'invalid_union') return [issue];
    const branches = issue.errors.filter((b) => b.length > 0);
    if (branches.length === 0) return [issue];
    const closest = branches.reduce((best, b) => (b.length < best.length ? b : best));
    return flatten(closest.map((inner) => ({ ...inner, path: [...issue.path, ...inner.path] }) as Issue));
  });
}

/** The container at `path` of `data` (an object or a list), or undefined. */
function containerAt(data: unknown, path: readonly PropertyKey[]): Record<PropertyKey, unknown> | undefined {
  let current = data;
  for (const segment of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<PropertyKey, unknown>)[segment];
  }
  return current !== null && typeof current === 'object' ? (current as Record<PropertyKey, unknown>) : undefined;
}

/** Repairs what `issue` says in `data` (mutated) when it is harmless; whether it did. */
function repair(data: unknown, issue: Issue): boolean {
  const path = issue.path;
  if (issue.code === 'unrecognized_keys') {
    const object = containerAt(data, path);
    if (!object || Array.isArray(object)) return false;
    for (const key of issue.keys) delete object[key];
    return true;
  }
  const key = path.at(-1);
  const parent = containerAt(data, path.slice(0, -1));
  if (key === undefined || !parent) return false;
  const value = parent[key];
  if (typeof value === 'number' && (issue.code === 'too_small' || issue.code === 'too_big') && (issue.origin === 'number' || issue.origin === 'int')) {
    const bound = Number(issue.code === 'too_small' ? issue.minimum : issue.maximum);
    if (!Number.isFinite(bound)) return false;
    parent[key] = issue.inclusive === false ? bound + (issue.code === 'too_small' ? 1 : -1) : bound;
    return true;
  }
  if (typeof value === 'number' && issue.code === 'invalid_type' && issue.expected === 'int' && Number.isFinite(value)) {
    parent[key] = Math.round(value);
    return true;
  }
  if (Array.isArray(parent) || typeof key !== 'string') return false;
  if (key === 'schema' && path.at(-2) === 'reply') {
    parent[key] = {};
    return true;
  }
  if (DROPPABLE.has(key)) {
    delete parent[key];
    return true;
  }
  if (Object.hasOwn(STAND_INS, key)) {
    parent[key] = STAND_INS[key];
    return true;
  }
  return false;
}

/**
 * Parses `raw` with `schema`, repairing harmless mistakes (see the module comment) until it
 * passes, a few rounds at most (a repair may uncover the next problem). Input: a part of the
 * document as YAML gave it (not changed: a copy is repaired). Output: the parsed part, or
 * undefined when something that is not harmless is wrong. Raises nothing.
 */
export function parseRepaired<T>(schema: z.ZodType<T>, raw: unknown): T | undefined {
  let data = raw;
  let copied = false;
  for (let round = 0; round < 5; round++) {
    const result = schema.safeParse(data);
    if (result.success) return result.data;
    if (!copied) {
      data = structuredClone(raw);
      copied = true;
    }
    const issues = flatten(result.error.issues);
    if (!issues.every((issue) => repair(data, issue))) return undefined;
  }
  return undefined;
}
