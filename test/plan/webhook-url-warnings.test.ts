/**
 * The webhook URLs `plan` warns of: those the service refuses by the rules it enforces
 * (api/outbound-url-rules.ts), as far as they are known without DNS.
 */
import { describe, expect, it } from 'vitest';
import { refusalWithoutDns } from '../../api/outbound-url-rules.ts';
import { webhookUrlRefusals } from '../../plan/webhook-url-warnings.ts';

describe('webhook URLs the service will refuse, judged without DNS', () => {
  it('webhookUrlRefusals: http, credentials, and a literal host that is not public are each named', () => {
    expect(webhookUrlRefusals('http://127.0.0.1:8787/acs')).toEqual(['it is http, not https', '127.0.0.1 is a loopback address']);
    expect(webhookUrlRefusals('https://user:pw@10.1.2.3/hook')).toEqual(['it carries credentials (user:password@)', '10.1.2.3 is a private address']);
    expect(webhookUrlRefusals('https://[::1]/hook')).toEqual(['::1 is a loopback address']);
    expect(webhookUrlRefusals('https://169.254.169.254/latest')).toEqual(['169.254.169.254 is a linkLocal address']);
    expect(webhookUrlRefusals('https://[::ffff:192.168.0.1]/')).toEqual(['::ffff:c0a8:1 is a private address']);
  });

  it('webhookUrlRefusals: localhost names are loopback without a lookup; other names and public addresses pass', () => {
    expect(webhookUrlRefusals('https://localhost:8443/')).toEqual(['localhost is a loopback name (localhost)']);
    expect(webhookUrlRefusals('https://api.localhost/')).toEqual(['api.localhost is a loopback name (localhost)']);
    expect(webhookUrlRefusals('https://hooks.example.com/acs')).toEqual([]);
    expect(webhookUrlRefusals('https://8.8.8.8/acs')).toEqual([]);
    expect(webhookUrlRefusals('https://[2001:4860:4860::8888]/acs')).toEqual([]);
  });

  it('webhookUrlRefusals: a URL the service refuses without DNS is always one plan warns of (the same rules)', () => {
    for (const url of ['http://example.com/', 'https://a:b@example.com/', 'https://192.168.1.1/', 'https://[fe80::1]/', 'https://0.0.0.0/', 'https://100.64.0.1/', 'https://8.8.8.8/', 'https://example.com/']) {
      expect(webhookUrlRefusals(url).length > 0, url).toBe(refusalWithoutDns(url) !== undefined);
    }
  });
});
