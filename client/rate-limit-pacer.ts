/**
 * Client-side pacing by the service's rate-limit headers (contract §2; IETF draft
 * "RateLimit header fields for HTTP", the `RateLimit-Limit`, `RateLimit-Remaining` and
 * `RateLimit-Reset` fields that acs-server sends on every answer), so that a long run of
 * requests — an apply of thousands of resources — slows down before the service refuses it
 * instead of after.
 *
 * One pacer is shared by every client of one service and key in a process (the activities keep
 * one per connection). It is advisory: other processes using the same key are not seen.
 *
 * Two things hold requests back, each for as long as it says and no longer:
 * - the service's own budget (`RateLimit-Remaining` until `RateLimit-Reset`), kept from every
 *   answer that carries it;
 * - a refusal's `Retry-After` (RFC 9110 §10.2.3) on a 429 or 503, which holds every request until
 *   then. A refusal says nothing about the service's budget unless it carries the service's own
 *   headers too: a gateway in front of the service may refuse with `Retry-After: 2` while the
 *   service's window has 59 s and plenty of requests left, so the budget is not emptied by it.
 */

/** Headers the pacer reads (a `Headers` object or anything with `get`). */
export interface HeaderSource {
  get(name: string): string | null;
}

/** A shared budget of requests for one service and key. */
export class RateLimitPacer {
  /** Requests the service still allows in the current window, minus those sent and not yet answered. */
  #remaining: number | undefined;
  /** When the service's current window ends (ms since the epoch). */
  #resetAt = 0;
  /** Until when a refusal's `Retry-After` holds every request (ms since the epoch). */
  #holdUntil = 0;
  #inFlight = 0;

  /**
   * Asks to send one request at `now` (ms since the epoch). Returns 0 when it may go (the caller
   * must then call {@link settle} once answered), else the milliseconds to wait — until a
   * refusal's `Retry-After` has passed, or until the service's window resets when its budget is
   * spent; the caller asks again after waiting.
   */
  reserve(now: number): number {
    if (now < this.#holdUntil) return this.#holdUntil - now;
    if (this.#remaining !== undefined && now >= this.#resetAt) this.#remaining = undefined;
    if (this.#remaining !== undefined && this.#remaining - this.#inFlight <= 0) return Math.max(1, this.#resetAt - now);
    this.#inFlight++;
    return 0;
  }

  /**
   * Records an answer to a reserved request: its rate-limit headers (`RateLimit-Remaining`,
   * `RateLimit-Reset` in seconds) update the service's budget, and a 429 or 503 with
   * `Retry-After` (seconds) holds every request for that long. `headers` is undefined when no
   * answer came (network error).
   */
  settle(now: number, status: number, headers: HeaderSource | undefined): void {
    this.#inFlight = Math.max(0, this.#inFlight - 1);
    if (!headers) return;
    const retryAfter = seconds(headers.get('retry-after'));
    if ((status === 429 || status === 503) && retryAfter !== undefined) this.#holdUntil = Math.max(this.#holdUntil, now + retryAfter * 1000);
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
