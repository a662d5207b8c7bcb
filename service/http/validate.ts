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
