import { APICallError } from 'ai';
import { describe, expect, it } from 'vitest';
import { toProviderFailure } from '../../service/agent-loop/providers/ai-sdk.ts';
import { redactKey } from '../../service/agent-loop/providers/redact-key.ts';

const key = 'sk-proj-Qx81VtZmR4wLpKe93NcYhBa2';

describe('redactKey', () => {
  it('redactKey: a key echoed whole is replaced', () => {
    expect(redactKey(`Incorrect API key provided: ${key}.`, key)).toBe('Incorrect API key provided: [redacted].');
  });

  it("redactKey: OpenAI's masked form keeps neither of the key's visible ends", () => {
    const out = redactKey('Incorrect API key provided: sk-proj-************************hBa2. You can find your API key at https://platform.openai.com/account/api-keys.', key);
    expect(out).not.toContain('hBa2');
    expect(out).not.toContain('sk-proj');
    expect(out).toContain('Incorrect API key provided: [redacted]');
    expect(out).toContain('https://platform.openai.com/account/api-keys.');
  });

  it('redactKey: a key shortened with an ellipsis, or a run of four of its characters, is replaced', () => {
    expect(redactKey('key sk-proj-Qx8...NcYhBa2 refused', key)).toBe('key [redacted] refused');
    expect(redactKey('key ending in YhBa2 refused', key)).toBe('key ending in [redacted] refused');
  });

  it('redactKey: prose that shares nothing with the key is left as it was', () => {
    const prose = 'You exceeded your current quota, please check your plan and billing details... (code: insufficient_quota)';
    expect(redactKey(prose, key)).toBe(prose);
  });

  it('toProviderFailure: a 401 whose vendor message echoes the masked key keeps the status and loses the key', () => {
    const error = new APICallError({
      message: 'Incorrect API key provided: sk-proj-****hBa2.',
      url: 'https://api.openai.com/v1/chat/completions',
      requestBodyValues: {},
      statusCode: 401,
    });
    const failure = toProviderFailure(error, key);
    expect(failure.kind).toBe('key_refused');
    expect(failure.message).toMatch(/^HTTP 401: Incorrect API key provided: \[redacted\]/);
    expect(failure.message).not.toContain('hBa2');
  });
});
