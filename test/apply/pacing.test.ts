/**
 * apply on the local engine against a service whose rate limit is far smaller than the apply:
 * it must pace itself by the `RateLimit-*` headers and finish in one invocation.
 */
import { describe, expect, it } from 'vitest';
import { createApplyActivities } from '../../activities/apply-activities.ts';
import { applyLocally } from '../../engine/local-engine.ts';
import { startServer } from '../../service/index.ts';
import { startFaultProxy } from '../support/fault-proxy.ts';
import { resourceCount, syntheticDefinition } from '../support/synthetic.ts';

describe('apply pacing', () => {
  it('apply: an apply of more requests than two rate-limit windows allow finishes in one invocation without a single 429', async () => {
    const server = await startServer({ inMemory: true, port: 0, tickMs: 60_000, logger: false, rateLimit: { max: 30, windowMs: 2_000 } });
    const proxy = await startFaultProxy({ target: server.url });
    try {
      const { api_key } = await server.provisionOrganization('paced-local');
      const size = { teams: 8, agents: 3, humans: 1, edges: 3 };
      const result = await applyLocally(
        { connection: { baseUrl: proxy.url, apiKeyEnv: 'PACED_KEY' }, desired: syntheticDefinition('paced-local-org', size), parallelism: 8 },
        createApplyActivities({ env: { PACED_KEY: api_key } }),
      );
      expect(result.applied).toHaveLength(resourceCount(size));
      expect(proxy.forwarded.length).toBeGreaterThan(2 * 30);
      expect(proxy.serverAnswers(429)).toBe(0);
    } finally {
      await proxy.close();
      await server.close();
    }
  });

  it('apply: behind a gateway that refuses with Retry-After: 1 while the service\'s window has a minute left, each refusal costs about a second, not the window', async () => {
    // The service's window is a minute long with room for the whole apply: only the gateway refuses.
    const server = await startServer({ inMemory: true, port: 0, tickMs: 60_000, logger: false, rateLimit: { max: 10_000, windowMs: 60_000 } });
    const proxy = await startFaultProxy({ target: server.url, retryAfterSeconds: 1, fault: (n) => (n % 7 === 3 ? 'refuse-429' : n % 11 === 5 ? 'refuse-503' : 'pass') });
    try {
      const { api_key } = await server.provisionOrganization('gateway-local');
      const size = { teams: 3, agents: 3, humans: 1, edges: 3 };
      const result = await applyLocally(
        { connection: { baseUrl: proxy.url, apiKeyEnv: 'GATEWAY_KEY' }, desired: syntheticDefinition('gateway-local-org', size), parallelism: 4 },
        createApplyActivities({ env: { GATEWAY_KEY: api_key } }),
      );
      expect(result.applied).toHaveLength(resourceCount(size));
      expect(proxy.refusals.length).toBeGreaterThan(3);
      for (const refusal of proxy.refusals) {
        // Sent again, no earlier than told and long before the service's window (60 s) ends.
        expect(refusal.retriedAt, refusal.request).toBeDefined();
        expect(refusal.retriedAt! - refusal.at).toBeGreaterThanOrEqual(refusal.retryAfterMs - 50);
        expect(refusal.retriedAt! - refusal.at).toBeLessThan(30_000);
      }
    } finally {
      await proxy.close();
      await server.close();
    }
  });
});
