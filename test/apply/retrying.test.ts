/**
 * The in-process retry policy (activities/retrying.ts) on a refused connection: at first contact
 * it is no transient fault (nothing listens there), once the service has answered it is a restart
 * to wait out; and long waits are reported as they start. The failures are the client's own
 * errors as a refused `fetch` makes them, raw and as the activities turn them into
 * `ApplicationFailure`s.
 */
import { describe, expect, it } from 'vitest';
import { toApplicationFailure } from '../../activities/failures.ts';
import { REPORTED_WAIT_MS, retrying, withRetries } from '../../activities/retrying.ts';
import type { RetryWait, ServiceContact } from '../../activities/retrying.ts';
import { AcsApiError } from '../../client/errors.ts';

/** A refused connection as the client reports it: fetch's TypeError around the socket's ECONNREFUSED. */
function refused(): AcsApiError {
  const socket = Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:8099'), { code: 'ECONNREFUSED' });
  return new AcsApiError({ status: 0, code: 'network_error', message: 'GET /organizations: cannot reach ACS at http://127.0.0.1:8099 (connection refused)', cause: new TypeError('fetch failed', { cause: socket }) });
}

/** A 503 that asks to wait `seconds`, as an activity fails with it. */
function unavailable(seconds: number): unknown {
  return toApplicationFailure(new AcsApiError({ status: 503, code: 'unavailable', message: 'GET /organizations: 503 unavailable: storage is unreachable', retryAfterSeconds: seconds }));
}

/** A call that fails with each of `failures` in turn, then returns 'ok'; counts its calls. */
function failingThen(failures: unknown[]): { call: () => Promise<string>; calls: () => number } {
  let calls = 0;
  return {
    call: async () => {
      const failure = failures[calls++];
      if (failure) throw failure;
      return 'ok';
    },
    calls: () => calls,
  };
}

describe('retrying: a refused connection', () => {
  for (const [kind, make] of [
    ['client error', refused],
    ['activity failure', () => toApplicationFailure(refused())],
  ] as const) {
    it(`(${kind}) before the service ever answered fails at once, with the client's message and no "gave up"`, async () => {
      const contact: ServiceContact = { answered: false };
      const flaky = failingThen([make(), make()]);
      const error = (await retrying(flaky.call, { contact }).catch((e: unknown) => e)) as Error;
      expect(flaky.calls()).toBe(1);
      expect(error.message).toBe('GET /organizations: cannot reach ACS at http://127.0.0.1:8099 (connection refused)');
    });

    it(`(${kind}) after the service answered once is a restart: retried until it answers again`, async () => {
      const contact: ServiceContact = { answered: false };
      const acts = withRetries({ first: async () => 'read', later: failingThen([make()]).call }, { contact });
      await acts.first();
      expect(contact.answered).toBe(true);
      await expect(acts.later()).resolves.toBe('ok');
    });
  }

  it('an HTTP answer, even an error, counts as contact: a refusal after it is retried', async () => {
    const contact: ServiceContact = { answered: false };
    const flaky = failingThen([new AcsApiError({ status: 500, code: 'internal', message: 'GET /organizations: 500 internal' }), refused()]);
    await expect(retrying(flaky.call, { contact })).resolves.toBe('ok');
    expect(flaky.calls()).toBe(3);
  });

  it('without a contact (a worker, which may start before the service) it is retried', async () => {
    const flaky = failingThen([refused()]);
    await expect(retrying(flaky.call)).resolves.toBe('ok');
    expect(flaky.calls()).toBe(2);
  });

  it('a TLS failure is never retried: a refused certificate is refused on the next attempt too', async () => {
    const tls = Object.assign(new Error('certificate has expired'), { code: 'CERT_HAS_EXPIRED' });
    const error = new AcsApiError({ status: 0, code: 'network_error', message: 'GET /organizations: cannot reach ACS at https://acs.test (TLS: certificate has expired)', cause: new TypeError('fetch failed', { cause: tls }) });
    for (const failure of [error, toApplicationFailure(error)]) {
      const flaky = failingThen([failure]);
      await expect(retrying(flaky.call)).rejects.toThrow('TLS: certificate has expired');
      expect(flaky.calls()).toBe(1);
    }
  });
});

describe('retrying: long waits are reported', () => {
  it(`a wait is reported once the call's waits add up to ${REPORTED_WAIT_MS} ms, with the attempt to come and why`, async () => {
    const waits: RetryWait[] = [];
    const flaky = failingThen([unavailable(1), unavailable(1), unavailable(1)]);
    await expect(retrying(flaky.call, { onWait: (w) => waits.push(w) })).resolves.toBe('ok');
    // 1 s (quiet), then 1 s more (2 s in all: reported), then 1 s more (reported).
    expect(waits.map((w) => [w.attempt, w.delayMs])).toEqual([
      [2, 1000],
      [3, 1000],
    ]);
    expect(waits[0]).toMatchObject({ maximumAttempts: 10, error: { message: 'GET /organizations: 503 unavailable: storage is unreachable' } });
  });

  it('a call that succeeds at once or after a short hiccup reports nothing', async () => {
    const waits: RetryWait[] = [];
    await retrying(failingThen([unavailable(1)]).call, { onWait: (w) => waits.push(w) });
    expect(waits).toEqual([]);
  });
});
