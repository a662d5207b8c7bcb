import { mkdtemp, readFile, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { fingerprintMatches } from '../../api/webhook-fingerprint.ts';
import { AcsClient } from '../../client/acs-client.ts';
import { startServer } from '../../service/index.ts';
import { runTeamctl } from '../support/cli.ts';
import { startReceiver, type Receiver } from '../support/webhook-receiver.ts';

// Webhooks reconciled by teamctl plan and apply, written by export (issue 19, teamctl side),
// against a real acs-server: the secret is set from its ${env:…} reference, compared through the
// live fingerprint, rotated only when it differs, and never printed.

const SECRET_A = `whsec_${Buffer.alloc(32, 0xa1).toString('base64')}`;
const SECRET_B = `whsec_${Buffer.alloc(32, 0xb2).toString('base64')}`;
let server: Awaited<ReturnType<typeof startServer>>;
let apiKey: string;
let client: AcsClient;
let receiver: Receiver;
let dir: string;

beforeAll(async () => {
  server = await startServer({ inMemory: true, port: 0, tickMs: 60_000, logger: false, webhooks: { allowPrivate: true, pollMs: 200 } });
  apiKey = (await server.provisionOrganization('webhook-apply-tests')).api_key;
  client = new AcsClient({ baseUrl: server.url, apiKey });
  receiver = await startReceiver('/acs');
  dir = await mkdtemp(join(tmpdir(), 'teamctl-webhooks-'));
});
afterAll(async () => {
  await receiver?.close();
  await server?.close();
});

let cleanup: Array<() => Promise<unknown>> = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

/** A definition file of organization `org` with the team `ops` and `webhooks` (YAML lines under `webhooks:`). */
async function definition(org: string, webhooks: string): Promise<string> {
  const file = join(dir, `${org}-${Math.random().toString(36).slice(2)}.yaml`);
  await writeFile(
    file,
    `apiVersion: teamctl/v1
organization:
  name: ${org}
${webhooks ? `  webhooks:\n${webhooks}` : ''}
teams:
  - name: ops
    agents: [{ name: bot }]
    humans: [{ name: dana }]
    edges: [[dana, bot]]
`,
  );
  return file;
}

const feed = (url: string, extra = '') => `    - name: ops-feed
      url: ${url}
      events: [message.created, thread.opened]
      secret: \${env:OPS_WEBHOOK_SECRET}
${extra}`;

const teamctl = (args: string[], env: Record<string, string> = {}) => runTeamctl(args, { ACS_BASE_URL: server.url, ACS_API_KEY: apiKey, OPS_WEBHOOK_SECRET: SECRET_A, ...env });

async function orgId(name: string): Promise<string> {
  return (await client.listOrganizations()).find((o) => o.org_name === name)!.org_id;
}

describe('webhooks in plan and apply', () => {
  it('apply: creates the webhook with the referenced secret (deliveries verify with it), and a second apply changes nothing; the secret is never printed', async () => {
    const file = await definition('hooks-create', feed(receiver.url));
    const plan = await teamctl(['plan', '-f', file]);
    expect(plan.code).toBe(0);
    expect(plan.stdout).toContain('+ create webhook/ops-feed');
    expect(plan.stdout).toMatch(/secret: +"\(sensitive\)"/);
    const applied = await teamctl(['apply', '-f', file, '--json']);
    expect(applied.code, applied.stderr).toBe(0);
    for (const text of [plan.stdout, plan.stderr, applied.stdout, applied.stderr]) expect(text).not.toContain(SECRET_A.slice(6, 30));
    const [hook] = await client.listWebhooks(await orgId('hooks-create'));
    expect(hook).toMatchObject({ name: 'ops-feed', url: receiver.url, events: ['message.created', 'thread.opened'], status: 'enabled' });
    expect(fingerprintMatches(hook!.secret_fingerprint, SECRET_A)).toBe(true);

    // A thread opened now is delivered, signed with the secret the definition referenced.
    const team = (await client.listTeams(await orgId('hooks-create')))[0]!;
    const graph = await client.getTeam(team.team_id);
    await client.openThread(graph.edges[0]!.edge_id, { sender_agent_id: graph.humans[0]!.human_id, content: 'hello' });
    const [delivery] = await receiver.waitFor(1, (r) => r.event?.type === 'thread.opened' && r.event?.org_id === hook!.org_id);
    expect(new StandardWebhook(SECRET_A).verify(delivery!.body, delivery!.headers as Record<string, string>)).toMatchObject({ type: 'thread.opened' });

    const again = await teamctl(['plan', '-f', file]);
    expect(again.stdout).toContain('No changes.');
    const reapplied = await teamctl(['apply', '-f', file]);
    expect(reapplied.stdout).toContain('No changes.');
    expect((await client.getWebhook(hook!.webhook_id)).updated_at).toBe(hook!.updated_at);
  });

  it('apply: a new secret in the variable is an update shown as sensitive that rotates the secret; fields that drifted are patched', async () => {
    const file = await definition('hooks-rotate', feed(receiver.url));
    expect((await teamctl(['apply', '-f', file])).code).toBe(0);
    const id = (await client.listWebhooks(await orgId('hooks-rotate')))[0]!.webhook_id;
    await client.updateWebhook(id, { events: ['team.*'], description: 'changed by hand' });

    const plan = await teamctl(['plan', '-f', file], { OPS_WEBHOOK_SECRET: SECRET_B });
    expect(plan.stdout).toContain('~ update webhook/ops-feed');
    expect(plan.stdout).toContain('secret: "(sensitive)" -> "(sensitive)"');
    expect(plan.stdout).toContain('events: ["team.*"] -> ["message.created","thread.opened"]');
    expect(plan.stdout).toContain('description: "changed by hand" -> ""');
    const applied = await teamctl(['apply', '-f', file], { OPS_WEBHOOK_SECRET: SECRET_B });
    expect(applied.code, applied.stderr).toBe(0);
    expect(applied.stdout + applied.stderr).not.toContain(SECRET_B.slice(6, 30));
    const live = await client.getWebhook(id);
    expect(fingerprintMatches(live.secret_fingerprint, SECRET_B)).toBe(true);
    expect(live).toMatchObject({ events: ['message.created', 'thread.opened'], description: '' });
    expect((await teamctl(['plan', '-f', file], { OPS_WEBHOOK_SECRET: SECRET_B })).stdout).toContain('No changes.');
  });

  it('apply: a webhook the file no longer names is deleted only with consent; an unnamed one of the same URL is adopted and named, not replaced', async () => {
    const file = await definition('hooks-delete', feed(receiver.url));
    expect((await teamctl(['apply', '-f', file])).code).toBe(0);
    const org = await orgId('hooks-delete');
    const byHand = await client.createWebhook(org, { url: `${receiver.url}?by-hand`, events: ['team.created'] });
    const withOther = await definition('hooks-delete', `${feed(receiver.url)}    - name: audit
      url: ${receiver.url}?by-hand
      events: [team.created]
      secret: \${env:OPS_WEBHOOK_SECRET}
`);
    const adopt = await teamctl(['apply', '-f', withOther]);
    expect(adopt.code, adopt.stderr).toBe(0);
    const hooks = await client.listWebhooks(org);
    expect(hooks.map((h) => [h.webhook_id === byHand.webhook_id, h.name])).toEqual([
      [false, 'ops-feed'],
      [true, 'audit'],
    ]);
    expect(fingerprintMatches(hooks[1]!.secret_fingerprint, SECRET_A)).toBe(true);

    const none = await definition('hooks-delete', '');
    const refused = await teamctl(['apply', '-f', none]);
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('--auto-approve');
    expect(await client.listWebhooks(org)).toHaveLength(2);
    const deleted = await teamctl(['apply', '-f', none, '--auto-approve']);
    expect(deleted.code, deleted.stderr).toBe(0);
    expect(deleted.stdout).toContain('webhook/ops-feed: deleted');
    expect(await client.listWebhooks(org)).toEqual([]);
  });

  it('apply: a variable that does not hold a webhook secret fails before any change, naming the variable and not its value', async () => {
    const file = await definition('hooks-bad-secret', feed(receiver.url));
    const result = await teamctl(['apply', '-f', file], { OPS_WEBHOOK_SECRET: 'not-a-whsec-value-1234' });
    expect(result.code).not.toBe(0);
    expect(result.stderr).toContain('OPS_WEBHOOK_SECRET does not hold a webhook secret');
    expect(result.stderr).not.toContain('not-a-whsec-value-1234');
    expect((await client.listOrganizations()).some((o) => o.org_name === 'hooks-bad-secret')).toBe(false);
  });

  it('apply: a variable that does not hold a webhook secret, or is not set, gets a hint with a command that makes one', async () => {
    const file = await definition('hooks-secret-hint', feed(receiver.url));
    const generator = `node -e "console.log('whsec_' + require('crypto').randomBytes(32).toString('base64'))"`;
    const malformed = await teamctl(['apply', '-f', file], { OPS_WEBHOOK_SECRET: 'not-a-whsec-value-1234' });
    expect(malformed.stderr).toContain(`hint: put a Standard Webhooks secret in OPS_WEBHOOK_SECRET; make one with: export OPS_WEBHOOK_SECRET=$(${generator})`);
    const unset = await teamctl(['plan', '-f', file], { OPS_WEBHOOK_SECRET: '' });
    expect(unset.stderr).toContain('error[unresolved_secret]: environment variable OPS_WEBHOOK_SECRET is not set');
    expect(unset.stderr).toContain(`hint: put a Standard Webhooks secret in OPS_WEBHOOK_SECRET; make one with: export OPS_WEBHOOK_SECRET=$(${generator})`);
    // The command makes a secret the check takes.
    const { execSync } = await import('node:child_process');
    const made = execSync(generator, { encoding: 'utf8' }).trim();
    expect((await teamctl(['plan', '-f', file], { OPS_WEBHOOK_SECRET: made })).code).toBe(0);
  });

  it('plan: warns of a webhook URL the service will refuse (http, a loopback address), at its key in the file, and plans it still; an https name is not resolved nor warned of', async () => {
    const file = await definition('hooks-warn', feed('http://127.0.0.1:8787/acs'));
    const plan = await teamctl(['plan', '-f', file]);
    expect(plan.code, plan.stderr).toBe(0);
    expect(plan.stdout).toContain('+ create webhook/ops-feed');
    expect(plan.stderr).toContain(
      `warning: ${file}:6:12: webhook/ops-feed: acs-server refuses http://127.0.0.1:8787/acs (it is http, not https; 127.0.0.1 is a loopback address) with webhook_url_refused, ` +
        'unless it was started with --webhook-allow-private (development and tests only): webhooks must be https and reach public addresses',
    );
    const named = await definition('hooks-warn-none', feed('https://hooks.example.com/acs'));
    const quiet = await teamctl(['plan', '-f', named]);
    expect(quiet.code).toBe(0);
    expect(quiet.stderr).not.toContain('warning');
  });

  it('apply: a webhook URL the service refuses is webhook_url_refused with a hint naming --webhook-allow-private', async () => {
    // A server with the default rules (this file's shared one allows private addresses).
    const strict = await startServer({ inMemory: true, port: 0, tickMs: 60_000, logger: false });
    try {
      const key = (await strict.provisionOrganization('strict')).api_key;
      const file = await definition('hooks-refused', feed('http://127.0.0.1:8787/acs'));
      const refused = await runTeamctl(['apply', '-f', file], { ACS_BASE_URL: strict.url, ACS_API_KEY: key, OPS_WEBHOOK_SECRET: SECRET_A });
      expect(refused.code).toBe(1);
      expect(refused.stderr).toContain('error[webhook_url_refused]');
      expect(refused.stderr).toContain(
        "hint: webhooks (and agents' MCP servers) must be https and reach public addresses only; for a receiver on this machine or a private network (development, tests), start acs-server with --webhook-allow-private",
      );
    } finally {
      await strict.close();
    }
  });

  it('export: writes the webhooks with ${env:…} secrets, and planning the export with the secret set shows no change', async () => {
    const file = await definition('hooks-export', feed(receiver.url, '      description: ops\n'));
    expect((await teamctl(['apply', '-f', file])).code).toBe(0);
    const out = join(dir, 'exported.yaml');
    const exported = await teamctl(['export', '--org', 'hooks-export', '-o', out]);
    expect(exported.code, exported.stderr).toBe(0);
    expect(exported.stderr).toContain('export: webhook ops-feed: set OPS_FEED_WEBHOOK_SECRET');
    const text = await readFile(out, 'utf8');
    expect(text).toContain('secret: ${env:OPS_FEED_WEBHOOK_SECRET}');
    expect(text).not.toContain('whsec_');
    const plan = await teamctl(['plan', '-f', out], { OPS_FEED_WEBHOOK_SECRET: SECRET_A });
    expect(plan.stdout).toContain('No changes.');
    cleanup.push(() => teamctl(['destroy', '-f', out, '--auto-approve'], { OPS_FEED_WEBHOOK_SECRET: SECRET_A }));
  });
});
