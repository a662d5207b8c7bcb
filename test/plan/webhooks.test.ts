import { describe, expect, it } from 'vitest';
import type { Organization } from '../../api/schemas.ts';
import { checkDefinition } from '../../definitions/semantics.ts';
import { DefinitionSchema } from '../../definitions/schema.ts';
import { dependencies } from '../../plan/dependencies.ts';
import { desiredState } from '../../plan/desired.ts';
import { destroyPlan } from '../../plan/destroy.ts';
import { exportDefinition, webhookSecretVariable } from '../../plan/export.ts';
import { computePlan, SENSITIVE } from '../../plan/plan.ts';
import { selectChanges } from '../../plan/selection.ts';
import type { ObservedState, ObservedWebhook } from '../../plan/types.ts';

// Webhooks as definitions resources (issue 19): matched by name, adopted by URL when unnamed,
// fields compared as other resources', the secret through the live fingerprint, deleted with the rest.

const at = '2026-11-22T09:15:02.123Z';
const org: Organization = { org_id: 'o1', org_name: 'acme', team_count: 0, human_count: 1, is_personal: false, deletion_protection: false, created_at: at };
const definition = (webhooks: unknown[]) => DefinitionSchema.parse({ apiVersion: 'teamctl/v1', organization: { name: 'acme', webhooks }, teams: [] });
const desiredOf = (webhooks: unknown[]) => desiredState(definition(webhooks));
const feed = { name: 'ops-feed', url: 'https://hooks.example.com/acs', events: ['message.created', 'thread.opened'], secret: '${env:OPS_WEBHOOK_SECRET}' };
const live = (extra: Partial<ObservedWebhook> = {}): ObservedWebhook => ({
  webhook_id: 'w1',
  org_id: 'o1',
  name: 'ops-feed',
  url: 'https://hooks.example.com/acs',
  events: ['thread.opened', 'message.created'],
  description: '',
  status: 'enabled',
  disabled_reason: null,
  secret_fingerprint: 'hmac-sha256:x:y',
  secretMatches: true,
  created_at: at,
  updated_at: at,
  ...extra,
});
const observed = (webhooks: ObservedWebhook[]): ObservedState => ({ organization: org, providerKeys: [], teams: [], webhooks });

describe('webhooks in definitions', () => {
  it('definitions: a webhook takes name, url, events, description, status and a secret reference; a secret in the clear, an unknown event type and a duplicate name are refused', () => {
    expect(definition([{ ...feed, description: 'ops', status: 'disabled' }]).organization.webhooks?.[0]).toMatchObject({ name: 'ops-feed', status: 'disabled' });
    const clear = DefinitionSchema.safeParse({ apiVersion: 'teamctl/v1', organization: { name: 'acme', webhooks: [{ ...feed, secret: 'whsec_abc' }] } });
    expect(clear.success).toBe(false);
    expect(JSON.stringify(clear.error?.issues)).toContain('webhook secrets must be references like ${env:NAME}');
    expect(JSON.stringify(clear.error?.issues)).not.toContain('whsec_abc');
    expect(DefinitionSchema.safeParse({ apiVersion: 'teamctl/v1', organization: { name: 'acme', webhooks: [{ ...feed, events: ['message.sent'] }] } }).success).toBe(false);
    const twice = checkDefinition(definition([feed, { ...feed, url: 'https://other.example.com/' }]));
    expect(twice.map((p) => p.message)).toEqual(['duplicate webhook name "ops-feed" (first used by webhooks[0])']);
  });

  it('plan: a new webhook is created with its fields and its secret shown as sensitive; the reference travels, never a value', () => {
    const plan = computePlan(desiredOf([feed]), observed([]));
    expect(plan.changes).toEqual([
      {
        action: 'create',
        kind: 'webhook',
        name: 'ops-feed',
        address: 'webhook/ops-feed',
        fields: { name: 'ops-feed', url: 'https://hooks.example.com/acs', events: ['message.created', 'thread.opened'], description: '', secret: SENSITIVE },
        secretRef: '${env:OPS_WEBHOOK_SECRET}',
      },
    ]);
  });

  it('plan: a webhook in sync (events in another order, the same secret) has no change; drifted fields are one update; status is managed only when set', () => {
    expect(computePlan(desiredOf([feed]), observed([live({ status: 'disabled' })])).changes).toEqual([]);
    const drifted = computePlan(desiredOf([{ ...feed, events: ['message.*'], status: 'enabled' }]), observed([live({ url: 'https://old.example.com/', status: 'disabled' })]));
    expect(drifted.changes).toHaveLength(1);
    expect(drifted.changes[0]).toMatchObject({
      action: 'update',
      kind: 'webhook',
      id: 'w1',
      diff: { url: { from: 'https://old.example.com/', to: 'https://hooks.example.com/acs' }, events: { from: ['thread.opened', 'message.created'], to: ['message.*'] }, status: { from: 'disabled', to: 'enabled' } },
      fields: { url: 'https://hooks.example.com/acs', events: ['message.*'], status: 'enabled' },
    });
    expect(drifted.changes[0]).not.toHaveProperty('secretRef');
  });

  it('plan: a secret that is not the live one (by its fingerprint) is an update that rotates it, shown as sensitive on both sides', () => {
    const plan = computePlan(desiredOf([feed]), observed([live({ secretMatches: false })]));
    expect(plan.changes).toEqual([
      { action: 'update', kind: 'webhook', name: 'ops-feed', address: 'webhook/ops-feed', id: 'w1', diff: { secret: { from: SENSITIVE, to: SENSITIVE } }, fields: {}, secretRef: '${env:OPS_WEBHOOK_SECRET}' },
    ]);
  });

  it('plan: a live webhook the definition does not name is deleted (an unnamed one by its id), and a renamedFrom renames instead', () => {
    const plan = computePlan(desiredOf([]), observed([live(), live({ webhook_id: 'w2', name: null, url: 'https://x.example.com/' })]));
    expect(plan.changes.map((c) => `${c.action} ${c.address}`)).toEqual(['delete webhook/ops-feed', 'delete webhook/w2']);
    const renamed = computePlan(desiredOf([{ ...feed, name: 'audit', renamedFrom: 'ops-feed' }]), observed([live()]));
    expect(renamed.changes).toMatchObject([{ action: 'update', address: 'webhook/audit', renamedFrom: 'ops-feed', fields: { name: 'audit' } }]);
  });

  it('plan: an unnamed live webhook of the same URL is adopted (the update names it) rather than replaced', () => {
    const plan = computePlan(desiredOf([feed]), observed([live({ name: null })]));
    expect(plan.changes).toMatchObject([{ action: 'update', kind: 'webhook', id: 'w1', diff: { name: { from: null, to: 'ops-feed' } }, fields: { name: 'ops-feed' } }]);
  });

  it('plan: a state recorded before webhooks were managed (no webhooks in the input) leaves the live ones alone', () => {
    const desired = desiredOf([]);
    delete desired.organization.webhooks;
    expect(computePlan(desired, observed([live()])).changes).toEqual([]);
  });

  it('plan: a webhook create waits for every webhook delete (at most 20 per organization) and for the organization; --target and destroy select by webhook/NAME', () => {
    const plan = computePlan(desiredOf([{ ...feed, name: 'new' }]), { organization: org, providerKeys: [], teams: [], webhooks: [live()] });
    expect(plan.changes.map((c) => `${c.action} ${c.address}`)).toEqual(['delete webhook/ops-feed', 'create webhook/new']);
    expect(dependencies(plan.changes)).toEqual([[], [0]]);
    expect(selectChanges(plan.changes, { targets: ['webhook/new'] }).changes.map((c) => c.address)).toEqual(['webhook/ops-feed', 'webhook/new']);
    const destroyOne = destroyPlan(desiredOf([feed]), observed([live()]), { targets: ['webhook/ops-feed'] });
    expect(destroyOne.map((c) => `${c.action} ${c.address}`)).toEqual(['delete webhook/ops-feed']);
  });

  it('export: webhooks come back under their names with their secrets as ${env:…} references; an unnamed one is named after its host, and planning the export changes only that name', () => {
    const exported = exportDefinition({ ...observed([live({ description: 'ops', status: 'disabled' }), live({ webhook_id: 'w2', name: null, url: 'https://hooks.example.com/other' })]), organization: org });
    const hooks = (exported.definition.organization as { webhooks: unknown[] }).webhooks;
    expect(hooks).toEqual([
      { name: 'ops-feed', url: 'https://hooks.example.com/acs', events: ['thread.opened', 'message.created'], description: 'ops', status: 'disabled', secret: '${env:OPS_FEED_WEBHOOK_SECRET}' },
      { name: 'hooks-example-com', url: 'https://hooks.example.com/other', events: ['thread.opened', 'message.created'], secret: '${env:HOOKS_EXAMPLE_COM_WEBHOOK_SECRET}' },
    ]);
    expect(exported.webhooks).toEqual([
      { name: 'ops-feed', variable: 'OPS_FEED_WEBHOOK_SECRET', named: false },
      { name: 'hooks-example-com', variable: 'HOOKS_EXAMPLE_COM_WEBHOOK_SECRET', named: true },
    ]);
    const replanned = computePlan(desiredState(DefinitionSchema.parse(exported.definition)), observed([live({ description: 'ops', status: 'disabled' }), live({ webhook_id: 'w2', name: null, url: 'https://hooks.example.com/other' })]));
    expect(replanned.changes.map((c) => `${c.action} ${c.address}`)).toEqual(['update webhook/hooks-example-com']);
    expect(webhookSecretVariable('1st hook')).toBe('WEBHOOK_1ST_HOOK_WEBHOOK_SECRET');
  });
});
