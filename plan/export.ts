/**
 * `teamctl export`: a definition of a live organization such that `plan` on it finds nothing to
 * change — how a team that started by hand moves to code. Each resource's fields come back under
 * their definition keys by the one declaration of its fields (`fromWire`), leaving out what holds
 * its default (a paused agent keeps `status: paused`, an active one leaves `status` unmanaged).
 * Provider keys and webhook secrets, which the service never returns, become `${env:NAME}`
 * references to variables the user fills in.
 */
import { WebhookFields } from '../api/events.ts';
import { AgentFields, HumanFields, OrganizationFields, TeamFields } from '../api/schemas.ts';
import type { Provider } from '../api/schemas.ts';
import { participantNames } from '../client/team-names.ts';
import type { ObservedState } from './types.ts';

/** A provider key as exported: the variable chosen for it and the hint of the live key. */
export interface ExportedProviderKey {
  provider: Provider;
  variable: string;
  /** The last characters of the live key (`key_hint`), so the user can tell which key to put there. */
  keyHint: string;
}

/** The variable an exported definition names for a provider's key: `OPENAI_PROVIDER_KEY`. */
export function providerKeyVariable(provider: Provider): string {
  return `${provider.toUpperCase()}_PROVIDER_KEY`;
}

/** A webhook as exported: its name in the definition, the variable chosen for its secret, and whether the live one had no name. */
export interface ExportedWebhook {
  name: string;
  variable: string;
  /** The live webhook had no name: the definition gives it this one, which the next apply sets (adopted by its URL). */
  named: boolean;
}

/** The variable an exported definition names for a webhook's secret: `OPS_FEED_WEBHOOK_SECRET`. */
export function webhookSecretVariable(name: string): string {
  const base = name.toUpperCase().replace(/[^A-Z0-9]+/g, '_').replace(/^_+|_+$/g, '');
  return `${/^[A-Z]/.test(base) ? '' : 'WEBHOOK_'}${base}${base ? '_' : ''}WEBHOOK_SECRET`;
}

/** A name for a live webhook without one, from its URL's host (`hooks-example-com`), unique among `taken`. */
function webhookName(url: string, taken: Set<string>): string {
  let host = 'webhook';
  try {
    host = new URL(url).hostname.replace(/[^A-Za-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 90) || 'webhook';
  } catch {
    // Not a URL the service would hold; the generic name does.
  }
  let name = host;
  for (let n = 2; taken.has(name); n++) name = `${host}-${n}`;
  return name;
}

/**
 * The definition (as plain data, in the file's layout) of an observed organization, and the
 * variables it names for provider keys and webhook secrets. Input: the organization's observed
 * state (it must exist). Output: `{ definition, providerKeys, webhooks }`; teams, agents and
 * humans in the service's order, edges as pairs of participant names; a webhook without a name
 * gets one from its URL's host. Raises nothing.
 */
export function exportDefinition(observed: ObservedState & { organization: NonNullable<ObservedState['organization']> }): {
  definition: Record<string, unknown>;
  providerKeys: ExportedProviderKey[];
  webhooks: ExportedWebhook[];
} {
  const providerKeys = [...observed.providerKeys]
    .sort((a, b) => (a.provider < b.provider ? -1 : 1))
    .map((k) => ({ provider: k.provider, variable: providerKeyVariable(k.provider), keyHint: k.key_hint }));
  const live = observed.webhooks ?? [];
  const taken = new Set(live.flatMap((w) => (w.name === null ? [] : [w.name])));
  const webhooks: ExportedWebhook[] = [];
  const hookEntries = live.map((w) => {
    const name = w.name ?? webhookName(w.url, taken);
    taken.add(name);
    const exported = { name, variable: webhookSecretVariable(name), named: w.name === null };
    webhooks.push(exported);
    return { ...WebhookFields.fromWire({ ...w, name }), secret: `\${env:${exported.variable}}` };
  });
  const organization = {
    ...OrganizationFields.fromWire(observed.organization),
    ...(providerKeys.length > 0 ? { providerKeys: Object.fromEntries(providerKeys.map((k) => [k.provider, `\${env:${k.variable}}`])) } : {}),
    ...(hookEntries.length > 0 ? { webhooks: hookEntries } : {}),
  };
  const teams = observed.teams.map(({ team, agents, humans, edges }) => {
    const names = participantNames({ agents, humans });
    return {
      ...TeamFields.fromWire(team),
      ...(agents.length > 0 ? { agents: agents.map((a) => AgentFields.fromWire(a)) } : {}),
      ...(humans.length > 0 ? { humans: humans.map((h) => HumanFields.fromWire(h)) } : {}),
      ...(edges.length > 0 ? { edges: edges.map((e) => e.participants.map((id) => names.get(id) ?? id)) } : {}),
    };
  });
  return { definition: { apiVersion: 'teamctl/v1', organization, teams }, providerKeys, webhooks };
}
