/** The part of node-postgres's `lib/utils.js` that storage/pglite-db.ts uses (it ships no types). */
declare module 'pg/lib/utils.js' {
  /** Converts a JavaScript value to a text (or, for buffers, binary) parameter, null for null and undefined. */
  export function prepareValue(value: unknown): string | Buffer | null;
  const utils: { prepareValue: typeof prepareValue };
  export default utils;
}
