/**
 * The smallest pieces of the wire format, on their own so that every schema module can use them
 * without importing `schemas.ts` (which imports the agent's tools, `agent-tools.ts`, in turn).
 * `schemas.ts` re-exports them.
 */
import { z } from 'zod';

/** An identifier (UUID string), lowercased so that ids compare equal however a client spells them. */
export const Id = z.uuid().overwrite((id) => id.toLowerCase());
/** An ISO 8601 UTC timestamp with milliseconds (documented as `format: date-time`). */
export const Timestamp = z.string().meta({ format: 'date-time' });
