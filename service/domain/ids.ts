import { randomUUID } from 'node:crypto';

/** A UUID as paths take it: 8-4-4-4-12 hex digits, any case (also stated in the OpenAPI document). */
export const uuidPattern = /^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/;

/** Whether `value` is a UUID string; ids that are not cannot exist, so callers answer 404. */
export function isUuid(value: string): boolean {
  return uuidPattern.test(value);
}

/** A new random (v4) UUID for a resource id. */
export function newId(): string {
  return randomUUID();
}

/** An ISO 8601 UTC timestamp with milliseconds and `Z` (contract §1) for a stored time. */
export function iso(value: Date | string): string {
  return (value instanceof Date ? value : new Date(value)).toISOString();
}

/** {@link iso} for an optional stored time: null stays null. */
export function isoOrNull(value: Date | string | null): string | null {
  return value === null ? null : iso(value);
}
