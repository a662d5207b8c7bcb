/**
 * Runs `fn` over `items` with at most `limit` calls in flight; resolves to the results in the
 * order of `items`, or rejects with the first error once the calls in flight have settled (so no
 * step is left running unobserved).
 *
 * Deterministic (no timers, no randomness), so it runs inside Temporal workflows as well.
 */
export async function mapBounded<T, R>(items: readonly T[], limit: number, fn: (item: T, index: number) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  let failure: { error: unknown } | undefined;
  async function lane(): Promise<void> {
    while (next < items.length && !failure) {
      const index = next++;
      try {
        results[index] = await fn(items[index] as T, index);
      } catch (error) {
        failure ??= { error };
      }
    }
  }
  const lanes = Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, () => lane());
  await Promise.all(lanes);
  if (failure) throw failure.error;
  return results;
}
