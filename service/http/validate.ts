import type { z } from 'zod';
import { ServiceError, type FieldProblem } from '../../errors/catalogue.ts';

/**
 * Parses `input` with `schema` and returns the typed value.
 * Errors: `invalid_request` with one `errors` entry per problem; each unknown field is named in
 * its own entry (contract §1).
 */
export function parseInput<S extends z.ZodType>(schema: S, input: unknown): z.output<S> {
  const result = schema.safeParse(input);
  if (result.success) return result.data;
  const errors: FieldProblem[] = [];
  for (const issue of result.error.issues) {
    const base = issue.path.map(String);
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) errors.push({ path: [...base, key].join('.'), message: 'unknown field' });
    } else {
      errors.push({ path: base.join('.') || '(body)', message: issue.message });
    }
  }
  throw new ServiceError('invalid_request', errors.map((e) => `${e.path}: ${e.message}`).join('; '), { errors });
}

/**
 * Refuses a query string naming a parameter outside `known` (contract §1 refuses unknown body
 * fields; query parameters follow the same rule on every route, so a misspelt `limt=5` is not
 * silently ignored). `query` is Fastify's parsed query object.
 * Errors: `invalid_request` with one `errors` entry per unknown parameter, its name as `path`.
 */
export function rejectUnknownQuery(query: unknown, known: readonly string[]): void {
  const unknown = Object.keys((query ?? {}) as Record<string, unknown>).filter((name) => !known.includes(name));
  if (unknown.length === 0) return;
  const errors: FieldProblem[] = unknown.map((path) => ({ path, message: 'unknown query parameter' }));
  throw new ServiceError('invalid_request', errors.map((e) => `${e.path}: ${e.message}`).join('; '), { errors });
}

/**
 * {@link parseInput} for a route whose body may be left out: no body at all (Fastify's
 * `undefined`) parses as `{}`; anything sent, JSON `null` included, must match `schema`.
 * Errors: `invalid_request` as {@link parseInput}.
 */
export function parseOptionalBody<S extends z.ZodType>(schema: S, body: unknown): z.output<S> {
  return parseInput(schema, body === undefined ? {} : body);
}
