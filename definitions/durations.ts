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

/**
 * Whole seconds of a duration string (`24h` → 86400, `90s` → 90), or undefined when it is not a
 * duration ({@link parseDuration}) or not a whole number of seconds (`1500ms`, `0.5s`). Pure.
 */
export function durationSeconds(text: string): number | undefined {
  const millis = parseDuration(text);
  return millis !== undefined && millis % 1000 === 0 ? millis / 1000 : undefined;
}

/** The units {@link formatSeconds} writes, largest first, in seconds. */
const UNITS: ReadonlyArray<readonly [string, number]> = [
  ['d', 86_400],
  ['h', 3_600],
  ['m', 60],
  ['s', 1],
];

/**
 * A whole number of seconds (at least 1) as a definition writes it, in the largest unit that
 * divides it exactly: 86400 → `1d`, 7200 → `2h`, 90 → `90s`, 120 → `2m`. The inverse of
 * {@link durationSeconds}. Pure; raises nothing (a value below 1 or fractional is written in seconds).
 */
export function formatSeconds(seconds: number): string {
  for (const [unit, size] of UNITS) if (seconds >= size && Number.isInteger(seconds / size)) return `${seconds / size}${unit}`;
  return `${seconds}s`;
}
