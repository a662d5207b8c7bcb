import { describe, expect, it } from 'vitest';
import { RateLimitPacer } from '../../client/rate-limit-pacer.ts';

const headers = (h: Record<string, string>) => new Headers(h);

describe('rate-limit pacer', () => {
  it('pacer: lets requests go while the window has budget, counting those not yet answered', () => {
    const pacer = new RateLimitPacer();
    expect(pacer.reserve(0)).toBe(0);
    pacer.settle(10, 200, headers({ 'ratelimit-remaining': '2', 'ratelimit-reset': '5' }));
    expect(pacer.reserve(20)).toBe(0);
    expect(pacer.reserve(20)).toBe(0);
    // Two sent, none answered: the budget of 2 is spent until the window resets at 10 + 5,000 ms.
    expect(pacer.reserve(30)).toBe(4_980);
  });

  it('pacer: after the window resets it lets requests go again', () => {
    const pacer = new RateLimitPacer();
    pacer.reserve(0);
    pacer.settle(0, 200, headers({ 'ratelimit-remaining': '0', 'ratelimit-reset': '2' }));
    expect(pacer.reserve(1_000)).toBe(1_000);
    expect(pacer.reserve(2_000)).toBe(0);
  });

  it('pacer: a 429 or 503 with Retry-After holds every request until then', () => {
    const pacer = new RateLimitPacer();
    pacer.reserve(0);
    pacer.settle(100, 503, headers({ 'retry-after': '3' }));
    expect(pacer.reserve(200)).toBe(2_900);
    expect(pacer.reserve(3_100)).toBe(0);
  });

  it('pacer: a gateway\'s 429 with Retry-After: 2 holds requests 2 s, not until the service\'s window resets 59 s later, and pacing by the service\'s headers goes on', () => {
    const pacer = new RateLimitPacer();
    pacer.reserve(0);
    pacer.settle(0, 200, headers({ 'ratelimit-remaining': '3', 'ratelimit-reset': '59' }));
    pacer.reserve(10);
    // The gateway's own refusal: no RateLimit-* of the service.
    pacer.settle(20, 429, headers({ 'retry-after': '2' }));
    expect(pacer.reserve(1_000)).toBe(1_020);
    // Then the service's budget (3 left) is used as before, and its end waits for the window.
    for (let i = 0; i < 3; i++) expect(pacer.reserve(2_020)).toBe(0);
    expect(pacer.reserve(2_020)).toBe(59_000 - 2_020);
  });

  it('pacer: the service\'s own 429 carries its headers: remaining 0 holds until its window resets', () => {
    const pacer = new RateLimitPacer();
    pacer.reserve(0);
    pacer.settle(0, 429, headers({ 'retry-after': '30', 'ratelimit-remaining': '0', 'ratelimit-reset': '30' }));
    expect(pacer.reserve(10_000)).toBe(20_000);
    expect(pacer.reserve(30_000)).toBe(0);
  });

  it('pacer: answers arriving out of order keep the smallest remaining count of a window', () => {
    const pacer = new RateLimitPacer();
    pacer.reserve(0);
    pacer.reserve(0);
    pacer.settle(5, 200, headers({ 'ratelimit-remaining': '0', 'ratelimit-reset': '10' }));
    pacer.settle(6, 200, headers({ 'ratelimit-remaining': '1', 'ratelimit-reset': '10' }));
    expect(pacer.reserve(7)).toBeGreaterThan(0);
  });

  it('pacer: answers without rate-limit headers change nothing', () => {
    const pacer = new RateLimitPacer();
    for (let i = 0; i < 100; i++) {
      expect(pacer.reserve(i)).toBe(0);
      pacer.settle(i, 200, headers({}));
    }
  });
});
