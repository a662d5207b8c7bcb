/**
 * The URL guard shared by webhooks (contract §9) and agents' remote MCP servers (§11): an
 * address is reachable only when it is public unicast, and for IPv6 only when it is global
 * unicast (contract §14) — the deprecated IPv4-compatible `::/96` and every range outside
 * 2000::/3 refused like their IPv4 forms. The HTTP side (400 `webhook_url_refused` at creation,
 * refusal at delivery) is in webhooks.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { assertDeliverableUrl, refusedAddress } from '../../service/outbound/url-guard.ts';

describe('refusedAddress', () => {
  it('url guard: IPv4-compatible IPv6 addresses (::/96) are refused, however they are written', () => {
    for (const address of ['::127.0.0.1', '::7f00:1', '0:0:0:0:0:0:7f00:1', '::10.0.0.1', '::a00:1', '::93.184.215.14', '::5db8:d70e', '::2', '::ffff']) {
      expect(refusedAddress(address), address).toBe('ipv4Compatible');
    }
  });

  it('url guard: IPv6 addresses outside the global unicast space 2000::/3 are refused (reserved by the IETF)', () => {
    for (const address of ['1::1', '4000::1', '8000::1', 'c000::1', 'e000::1', 'fe00::1', '::1:0:0:1']) {
      expect(refusedAddress(address), address).toBe('reserved');
    }
  });

  it('url guard: the special IPv6 ranges that ipaddr.js names are refused by their name, inside 2000::/3 too', () => {
    const named: Array<[string, string]> = [
      ['::', 'unspecified'],
      ['::1', 'loopback'],
      ['::ffff:127.0.0.1', 'loopback'],
      ['::ffff:10.1.2.3', 'private'],
      ['::ffff:0:7f00:1', 'rfc6145'],
      ['64:ff9b::7f00:1', 'rfc6052'],
      ['64:ff9b:1::1', 'rfc6052'],
      ['100::1', 'discard'],
      ['2001::1', 'teredo'],
      ['2001:db8::1', 'reserved'],
      ['2001:2::1', 'benchmarking'],
      ['2001:10::1', 'deprecatedOrchid'],
      ['2001:20::1', 'orchid2'],
      ['2002:7f00:1::1', '6to4'],
      ['3fff::1', 'reserved'],
      ['5f00::1', 'segmentRouting'],
      ['fc00::1', 'uniqueLocal'],
      ['fd12:3456::1', 'uniqueLocal'],
      ['fe80::1', 'linkLocal'],
      ['fec0::1', 'deprecatedSiteLocal'],
      ['ff02::1', 'multicast'],
    ];
    for (const [address, range] of named) expect(refusedAddress(address), address).toBe(range);
  });

  it('url guard: global unicast IPv6 and public IPv4 addresses are allowed', () => {
    for (const address of ['2606:2800:21f:cb07:6820:80da:af6b:8b2c', '2a00:1450:4001:81c::200e', '2001:4860:4860::8888', '2c0f:fb50:4003::1', '93.184.215.14', '::ffff:93.184.215.14']) {
      expect(refusedAddress(address), address).toBeUndefined();
    }
    expect(refusedAddress('not-an-address')).toBe('not an IP address');
  });
});

describe('assertDeliverableUrl', () => {
  const policy = { allowPrivate: false, resolve: async (host: string) => (host === 'compat.example' ? [{ address: '::7f00:1', family: 6 }] : []) };

  it('url guard: URLs with an IPv4-compatible host, literal or resolved, are refused naming why (400 webhook_url_refused)', async () => {
    for (const url of ['https://[::127.0.0.1]/h', 'https://[::7f00:1]/h', 'https://[0:0:0:0:0:0:a00:1]:8443/h', 'https://compat.example/h']) {
      await expect(assertDeliverableUrl(url, policy), url).rejects.toMatchObject({ code: 'webhook_url_refused', message: expect.stringContaining('ipv4Compatible') });
    }
  });
});
