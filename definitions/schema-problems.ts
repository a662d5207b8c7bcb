/**
 * Turns Zod issues into readable problems with their paths.
 *
 * Zod's own messages are generic ("Invalid input"); a definition's author needs to know which key
 * is unknown and what was meant, which key is missing, and what is allowed. Input values are
 * quoted only where they cannot be a secret (enum values, the version), never otherwise.
 */
import { z } from 'zod';
import { Providers } from '../api/schemas.ts';
import { suggestion } from './did-you-mean.ts';
import type { PathProblem, PathSegment } from './problems.ts';

type Issue = z.core.$ZodIssue;

/** Removes the wrappers that do not change the shape (optional, default, nullable, lazy). */
function unwrap(schema: z.ZodType | undefined): z.ZodType | undefined {
  let current = schema;
  while (current instanceof z.ZodOptional || current instanceof z.ZodDefault || current instanceof z.ZodNullable || current instanceof z.ZodLazy) {
    current = current.unwrap() as z.ZodType;
  }
  return current;
}

/** The schema that applies at `path` of a document validated by `root`, if it can be followed. */
function schemaAt(root: z.ZodType, path: readonly PathSegment[]): z.ZodType | undefined {
  let current = unwrap(root);
  for (const segment of path) {
    // A union of objects (a pipeline step or a parallel group): follow the member that has the key.
    if (current instanceof z.ZodUnion) {
      current = (current.options as z.ZodType[]).find((o) => o instanceof z.ZodObject && Object.hasOwn(o.shape, String(segment)));
    }
    if (current instanceof z.ZodObject) current = current.shape[String(segment)] as z.ZodType | undefined;
    else if (current instanceof z.ZodRecord) current = current.valueType as z.ZodType;
    else if (current instanceof z.ZodArray) current = current.element as z.ZodType;
    else if (current instanceof z.ZodTuple) current = current.def.items[Number(segment)] as z.ZodType | undefined;
    else return undefined;
    current = unwrap(current);
  }
  return current;
}

/** The keys an object schema accepts at `path` (empty when it is not an object). */
function knownKeys(root: z.ZodType, path: readonly PathSegment[]): string[] {
  const schema = schemaAt(root, path);
  if (schema instanceof z.ZodUnion) return (schema.options as z.ZodType[]).flatMap((o) => (o instanceof z.ZodObject ? Object.keys(o.shape) : []));
  return schema instanceof z.ZodObject ? Object.keys(schema.shape) : [];
}

/** The value at `path` of plain data, or undefined when the path leaves it. */
function valueAt(data: unknown, path: readonly PathSegment[]): unknown {
  let current = data;
  for (const segment of path) {
    if (current === null || typeof current !== 'object') return undefined;
    current = (current as Record<PathSegment, unknown>)[segment];
  }
  return current;
}

/** A YAML-minded name of a value's type, for "expected X, got Y". */
function typeName(value: unknown): string {
  if (value === null) return 'null (an empty value)';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  return `a ${typeof value}`;
}

/** Longest quoted value in a message, in characters; longer ones are cut with `…`. */
const MAX_QUOTED = 60;

/**
 * A value as a message quotes it: JSON for a scalar, cut to {@link MAX_QUOTED} characters (a
 * megabyte-long key stays one short line); `a mapping` or `a list` for a collection, which is
 * never serialised (it may be deep).
 */
function quoted(value: unknown): string {
  if (value !== null && typeof value === 'object') return Array.isArray(value) ? 'a list' : 'a mapping';
  const text = typeof value === 'string' ? JSON.stringify(value.length > MAX_QUOTED ? `${value.slice(0, MAX_QUOTED)}…` : value) : String(value);
  return text;
}

const EXPECTED: Record<string, string> = { object: 'a mapping', array: 'a list', string: 'a string', number: 'a number' };

/** `1,000,000`: a bound as a message writes it. */
const shownNumber = (n: number) => n.toLocaleString('en-US');

/**
 * What a number at `path` must be, from its schema's own bounds (`maxIterations must be 1–100`,
 * `must be at least 1`, `a whole number`), or undefined when the schema there is not a number's.
 * The key names the number, as the user wrote it.
 */
function numberRange(root: z.ZodType, path: readonly PathSegment[]): string | undefined {
  const schema = schemaAt(root, path);
  if (!(schema instanceof z.ZodNumber)) return undefined;
  // Zod's integers are bounded by the safe integers: those are no bound a person wrote.
  const min = schema.minValue !== null && schema.minValue > Number.MIN_SAFE_INTEGER ? schema.minValue : undefined;
  const max = schema.maxValue !== null && schema.maxValue < Number.MAX_SAFE_INTEGER ? schema.maxValue : undefined;
  const range = min !== undefined && max !== undefined ? `${shownNumber(min)}–${shownNumber(max)}` : min !== undefined ? `at least ${shownNumber(min)}` : max !== undefined ? `at most ${shownNumber(max)}` : '';
  const last = path.findLast((segment) => typeof segment === 'string');
  const subject = last === undefined ? 'the number' : String(last);
  if (schema.isInt) return range === '' ? `${subject} must be a whole number` : `${subject} must be a whole number, ${range}`;
  return range === '' ? `${subject} must be a number` : `${subject} must be ${range}`;
}

/** The problems of one issue (one per key for unknown keys). */
function problemsOf(issue: Issue, root: z.ZodType, data: unknown): PathProblem[] {
  const path = issue.path.map((s) => (typeof s === 'symbol' ? String(s) : s));
  const last = path.at(-1);
  const parentPath = path.slice(0, -1);
  // A key that is absent fails as a wrong type or value of `undefined`: say it is missing instead.
  if ((issue.code === 'invalid_type' || issue.code === 'invalid_value') && last !== undefined) {
    const parent = valueAt(data, parentPath);
    if (parent !== null && typeof parent === 'object' && !Object.hasOwn(parent, last)) {
      const what = typeof last === 'number' ? `item ${last}` : `required key ${JSON.stringify(last)}`;
      return [{ path: parentPath, target: 'value', message: `missing ${what}` }];
    }
  }
  switch (issue.code) {
    case 'invalid_union': {
      // Zod reports every member's issues; the member that came closest is what the author meant.
      const branches = issue.errors.filter((b) => b.length > 0);
      if (branches.length === 0) return [{ path, target: 'value', message: issue.message }];
      const closest = branches.reduce((best, b) => (b.length < best.length ? b : best));
      return closest.flatMap((inner) => problemsOf({ ...inner, path: [...issue.path, ...inner.path] } as Issue, root, data));
    }
    case 'unrecognized_keys': {
      const inProviderKeys = last === 'providerKeys';
      const candidates = inProviderKeys ? [...Providers] : knownKeys(root, path);
      return issue.keys.map((key) => ({
        path: [...path, key],
        target: 'key',
        message: `${inProviderKeys ? 'unknown provider' : 'unknown key'} ${quoted(key)}${suggestion(key, candidates)}`,
      }));
    }
    case 'invalid_type': {
      if (issue.expected === 'int' && typeof valueAt(data, path) === 'number') {
        const range = numberRange(root, path);
        if (range) return [{ path, target: 'value', message: range }];
      }
      if (path.length === 0 && valueAt(data, path) == null) {
        return [{ path, target: 'value', message: 'the document is empty; expected a mapping with apiVersion, organization and teams' }];
      }
      const expected = EXPECTED[issue.expected] ?? issue.expected;
      return [{ path, target: 'value', message: `expected ${expected}, got ${typeName(valueAt(data, path))}` }];
    }
    case 'invalid_value': {
      const allowed = issue.values.map(String);
      const input = valueAt(data, path);
      const shown = quoted(input);
      if (allowed.length === 1) {
        return [{ path, target: 'value', message: `must be ${JSON.stringify(allowed[0])}, got ${shown}` }];
      }
      const noun = last === 'provider' ? 'unknown provider' : 'invalid value';
      const hint = typeof input === 'string' ? suggestion(input, allowed) : ` (expected one of ${allowed.join(', ')})`;
      return [{ path, target: 'value', message: `${noun} ${shown}${hint}` }];
    }
    case 'too_big':
    case 'too_small': {
      const input = valueAt(data, path);
      const parentKey = parentPath.at(-1);
      if (issue.origin === 'array' && parentKey === 'edges' && Array.isArray(input)) {
        return [{ path, target: 'value', message: `an edge joins exactly two participants, got ${input.length}` }];
      }
      if ((issue.origin === 'number' || issue.origin === 'int') && typeof input === 'number') {
        const range = numberRange(root, path);
        if (range) return [{ path, target: 'value', message: range.replace(/ must be a whole number, /, ' must be ') }];
      }
      if (issue.origin === 'string' && typeof input === 'string') {
        const limit = issue.code === 'too_big' ? issue.maximum : issue.minimum;
        const message =
          issue.code === 'too_small' && Number(limit) === 1
            ? 'must not be empty'
            : `must be at ${issue.code === 'too_big' ? 'most' : 'least'} ${limit} characters, got ${input.trim().length}`;
        return [{ path, target: 'value', message }];
      }
      return [{ path, target: 'value', message: issue.message }];
    }
    case 'invalid_key': {
      // A key of a record that its key schema refuses (an MCP server's header name): the key is
      // a name, never a secret, and the key schema's own message says what is wrong with it.
      const reasons = [...new Set(issue.issues.map((inner) => inner.message))].join('; ');
      return [{ path, target: 'key', message: `invalid name ${quoted(last)}: ${reasons}` }];
    }
    case 'invalid_format':
      if (issue.format === 'url') return [{ path, target: 'value', message: 'must be an http or https URL (https://host/path)' }];
      return [{ path, target: 'value', message: issue.message }];
    default:
      // Custom messages (secret references, email) are set on the schema and never quote the input.
      return [{ path, target: 'value', message: issue.message }];
  }
}

/**
 * Converts the issues of a failed `safeParse` into problems with paths and targets.
 *
 * Input: the issues, the schema that produced them (to list the accepted keys for hints) and the
 * data that was parsed (to tell a missing key from a wrong type). Output: one problem per issue,
 * one per key for unknown keys. Raises nothing.
 */
export function schemaProblems(issues: readonly Issue[], root: z.ZodType, data: unknown): PathProblem[] {
  return issues.flatMap((issue) => problemsOf(issue, root, data));
}
