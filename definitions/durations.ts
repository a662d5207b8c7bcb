/**
 * Durations in definitions (`30s`, `10m`, `2h`, `7d`): parsing and the default step timeout.
 * Free of Zod and I/O like `pipeline-graph.ts`, so the workflow sandbox can import it; on its own
 * so the schema can check durations without importing the graph, which imports the schema's types.
 */
import ms from 'ms';

/** Default `timeout` of a step that awaits a reply: ten minutes. */
export const DEFAULT_STEP_TIMEOUT = '10m';

/**
 * Milliseconds of a duration string such as `30s`, `10m`, `2h`, `7d` (the `ms` library's
 * format), or undefined when it is not one or is not positive.
 */
export function parseDuration(text: string): number | undefined {
  // ms() reads a bare number as milliseconds; a unit is required so `10` is not 10 ms by surprise.
  if (!/^\s*\d+(\.\d+)?\s*[a-z]+\s*$/i.test(text)) return undefined;
  const value = ms(text as ms.StringValue);
  return Number.isFinite(value) && value > 0 ? value : undefined;
}
