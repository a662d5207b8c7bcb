import { describe, expect, it } from 'vitest';
import { reportError } from '../../cli/errors.ts';
import { applyWithTemporal } from '../../engine/temporal-engine.ts';
import { loadTemporalSettings } from '../../temporal/settings.ts';
import { TEMPORAL_PAYLOAD_LIMIT_BYTES } from '../../workflows/payload-bytes.ts';
import { syntheticDefinition } from '../support/synthetic.ts';

describe('apply on Temporal: the input size', () => {
  it('apply --engine temporal: a definition over Temporal\'s 2 MiB payload limit is refused as input_too_large before any connection, naming its size and the way out', async () => {
    // 1,500 teams of 10 agents and 20 edges: ~3 MiB of JSON.
    const desired = syntheticDefinition('too-large', { teams: 1_500, agents: 10, humans: 0, edges: 20 });
    expect(Buffer.byteLength(JSON.stringify(desired))).toBeGreaterThan(TEMPORAL_PAYLOAD_LIMIT_BYTES);
    // Nothing listens on port 1: had it connected, this would be temporal_unreachable.
    const settings = loadTemporalSettings({ TEMPORAL_ADDRESS: '127.0.0.1:1' });
    const refused = await applyWithTemporal({ connection: { baseUrl: 'http://127.0.0.1:1', apiKeyEnv: 'UNUSED' }, desired }, { settings, taskQueue: 'unused' }).catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: 'input_too_large' });
    expect((refused as Error).message).toMatch(/^the apply of organization "too-large" would start a workflow whose input \(the definition\) is 3\.\d MiB as JSON, over Temporal's limit of 2 MiB for one payload; nothing was started$/);
    expect(reportError(refused).hint).toBe('apply it with --engine local (no such limit), or split the definition into several organizations');
  });
});
