/**
 * Addresses of resources, as `plan` prints them and `--target` / `--exclude` take them:
 *
 * | resource | address |
 * |---|---|
 * | the organization | `organization` |
 * | a provider key | `provider_key/openai` |
 * | a team | `team/intake` |
 * | an agent, a human | `team/intake/agent/triager`, `team/intake/human/dana` |
 * | an edge | `team/intake/edge/dana,triager` (either order) |
 * | a schedule | `schedule/nightly-triage` |
 * | a webhook | `webhook/ops-feed` (a live one without a name: `webhook/<its id>`) |
 *
 * An address covers itself and everything under it (`team/intake` covers the team's agents,
 * humans and edges). Pure functions: the workflow's plan uses them.
 */

/** The address of the organization. */
export const ORGANIZATION_ADDRESS = 'organization';

/** The address of a provider key. */
export function providerKeyAddress(provider: string): string {
  return `provider_key/${provider}`;
}

/** The address of a team. */
export function teamAddress(team: string): string {
  return `team/${team}`;
}

/** The address of an agent or a human of a team. */
export function participantAddress(team: string, kind: 'agent' | 'human', name: string): string {
  return `${teamAddress(team)}/${kind}/${name}`;
}

/** The address of an edge of a team, its participants in the order given. */
export function edgeAddress(team: string, pair: readonly [string, string]): string {
  return `${teamAddress(team)}/edge/${pair[0]},${pair[1]}`;
}

/** The address of a webhook. */
export function webhookAddress(name: string): string {
  return `webhook/${name}`;
}

/** The address of a schedule. */
export function scheduleAddress(name: string): string {
  return `schedule/${name}`;
}

/** The kinds of resource an address may name, by its first segment and, under a team, its third. */
const TOP = new Set(['organization', 'provider_key', 'team', 'schedule', 'webhook']);
const IN_TEAM = new Set(['agent', 'human', 'edge']);

/**
 * Why `address` is not one (a message for the user), or undefined when it is well formed.
 * Names may hold any character but `/` (and `,` in an edge's participants).
 */
export function addressProblem(address: string): string | undefined {
  const parts = address.split('/');
  const [top] = parts;
  const expected = 'expected organization, provider_key/P, team/T, team/T/agent/A, team/T/human/H, team/T/edge/A,B, webhook/W or schedule/S';
  if (!top || !TOP.has(top)) return `unknown resource kind ${JSON.stringify(top ?? '')}: ${expected}`;
  if (top === 'organization') return parts.length === 1 ? undefined : `"organization" takes no name: ${expected}`;
  if (parts.some((p) => p === '')) return `an empty name: ${expected}`;
  if (top !== 'team') return parts.length === 2 ? undefined : `${top}/NAME has one name: ${expected}`;
  if (parts.length === 2) return undefined;
  if (parts.length !== 4 || !IN_TEAM.has(parts[2]!)) return expected;
  if (parts[2] === 'edge' && parts[3]!.split(',').filter(Boolean).length !== 2) return `an edge is named by its two participants: team/T/edge/A,B`;
  return undefined;
}

/** An address in the form it is compared in: an edge's participants sorted. */
function canonical(address: string): string {
  const parts = address.split('/');
  if (parts[0] === 'team' && parts[2] === 'edge' && parts[3] !== undefined) parts[3] = parts[3].split(',').sort().join(',');
  return parts.join('/');
}

/** Whether `selector` names `address` or a resource that holds it (`team/intake` covers `team/intake/agent/x`). */
export function covers(selector: string, address: string): boolean {
  const s = canonical(selector);
  const a = canonical(address);
  return a === s || a.startsWith(`${s}/`);
}
