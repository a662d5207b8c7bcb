/**
 * Client-side pacing by the service's rate-limit headers (contract §2; IETF draft
 * "RateLimit header fields for HTTP", the `RateLimit-Limit`, `RateLimit-Remaining` and
 * `RateLimit-Reset` fields that acs-server sends on every answer), so that a long run of
 * requests — an apply of thousands of resources — slows down before the service refuses it
 * instead of after.
 *
 * One pacer is shared by every client of one service and key in a process (the activities keep
 * one per connection). It is advisory: other processes using the same key are not seen, and a
 * 429 with `Retry-After` still stops it for the time said.
 */

/** Headers the pacer reads (a `Headers` object or anything with `get`). */
export interface HeaderSource {
  get(name: string): string | null;
}

/** A shared budget of requests for one service and key. */
export class RateLimitPacer {
  /** Requests the service still allows in the current window, minus those sent and not yet answered. */
  #remaining: number | undefined;
  /** When the current window ends (ms since the epoch). */
  #resetAt = 0;
  #inFlight = 0;

  /**
   * Asks to send one request at `now` (ms since the epoch). Returns 0 when it may go (the caller
   * must then call {@link settle} once answered), else the milliseconds to wait until the
   * window resets; the caller asks again after waiting.
   */
  reserve(now: number): number {
    if (this.#remaining !== undefined && now >= this.#resetAt) this.#remaining = undefined;
    if (this.#remaining !== undefined && this.#remaining - this.#inFlight <= 0) return Math.max(1, this.#resetAt - now);
    this.#inFlight++;
    return 0;
  }

  /**
   * Records an answer to a reserved request: its rate-limit headers (`RateLimit-Remaining`,
   * `RateLimit-Reset` in seconds) and, for a 429 or 503, `Retry-After` (seconds), which empties
   * the budget until then. `headers` is undefined when no answer came (network error).
   */
  settle(now: number, status: number, headers: HeaderSource | undefined): void {
    this.#inFlight = Math.max(0, this.#inFlight - 1);
    if (!headers) return;
    const retryAfter = seconds(headers.get('retry-after'));
    if ((status === 429 || status === 503) && retryAfter !== undefined) {
      this.#remaining = 0;
      this.#resetAt = Math.max(this.#resetAt, now + retryAfter * 1000);
      return;
    }
    const remaining = seconds(headers.get('ratelimit-remaining'));
    const reset = seconds(headers.get('ratelimit-reset'));
    if (remaining === undefined || reset === undefined) return;
    const resetAt = now + reset * 1000;
    // `RateLimit-Reset` is whole seconds: an answer whose window ends more than a second later
    // than the known one opened a new window; otherwise answers arriving out of order keep the
    // smallest count seen.
    if (this.#remaining === undefined || resetAt > this.#resetAt + 1000) {
      this.#remaining = remaining;
      this.#resetAt = resetAt;
    } else {
      this.#remaining = Math.min(this.#remaining, remaining);
    }
  }
}

function seconds(value: string | null): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  const n = Number(value);
  return Number.isFinite(n) && n >= 0 ? n : undefined;
}
