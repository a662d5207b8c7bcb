/**
 * Remote A2A agents' Agent Cards as the CLI shows them (contract §12): `plan` lists each remote
 * agent of the file with its card's name and skills, and warns (without failing) of a card that
 * cannot be read or does not parse; `validate --remote` fails on such a card. The cards are read
 * by the `readAgentCards` activity (`activities/apply-activities.ts`), where the agents' header
 * templates are resolved: nothing here holds a header value.
 */
import type { CardVerdict } from '../activities/remote-cards.ts';
import { createApplyActivities } from '../activities/apply-activities.ts';
import { locateInFile } from '../definitions/load.ts';
import type { PathSegment } from '../definitions/problems.ts';
import type { Definition } from '../definitions/schema.ts';
import { participantAddress } from '../plan/addresses.ts';
import type { CliIo } from './io.ts';

/** A remote agent of a definition: its address, where its `a2a.url` is in the file, and its `a2a` (header values as templates). */
export interface RemoteAgentEntry {
  address: string;
  path: PathSegment[];
  url: string;
  headers: Record<string, string>;
}

/** A remote agent with what reading its card gave. */
export type RemoteAgentCard = RemoteAgentEntry & { verdict: CardVerdict };

/** The remote A2A agents of a definition, in file order. Raises nothing. */
export function remoteAgentsOf(definition: Pick<Definition, 'teams'>): RemoteAgentEntry[] {
  return definition.teams.flatMap((team, t) =>
    team.agents.flatMap((agent, i) =>
      agent.a2a ? [{ address: participantAddress(team.name, 'agent', agent.name), path: ['teams', t, 'agents', i, 'a2a', 'url'], url: agent.a2a.url, headers: { ...(agent.a2a.headers ?? {}) } }] : [],
    ),
  );
}

/**
 * Reads the card of every remote agent of `definition` (each within `timeoutMs`, default 5 s).
 * Output: the agents with their verdicts; empty when the file has none. Errors: `unresolved_secret`
 * and `invalid_usage` (a header template), as `ApplicationFailure`s of the activity.
 */
export async function readRemoteCards(definition: Pick<Definition, 'teams'>, io: Pick<CliIo, 'env'>, timeoutMs?: number): Promise<RemoteAgentCard[]> {
  const agents = remoteAgentsOf(definition);
  if (agents.length === 0) return [];
  const verdicts = await createApplyActivities({ env: io.env }).readAgentCards({ agents: agents.map(({ url, headers }) => ({ url, headers })), ...(timeoutMs !== undefined ? { timeoutMs } : {}) });
  return agents.map((agent, i) => ({ ...agent, verdict: verdicts[i]! }));
}

/**
 * The line of a remote agent whose card was read: `team/desk/agent/scout: Scout (streams) — skills:
 * search (Web search), summarize (Summarize)`; undefined for one whose card was not.
 */
export function cardLine(entry: RemoteAgentCard): string | undefined {
  if (!entry.verdict.ok) return undefined;
  const card = entry.verdict.card;
  const skills = card.skills.length === 0 ? 'no skills listed' : `skills: ${card.skills.map((s) => (s.name === s.id ? s.id : `${s.id} (${s.name})`)).join(', ')}`;
  return `  ${entry.address}: ${card.name}${card.streaming ? ' (streams)' : ''} — ${skills}`;
}

/** Where the entry's `a2a.url` is in `file` (`FILE:LINE:COL`), else `file`. */
export async function entryPlace(file: string, entry: RemoteAgentEntry): Promise<string> {
  return (await locateInFile(file, entry.path)) ?? file;
}

/**
 * Prints what `plan` shows of remote agents: the section of cards read (to `out`, after the plan),
 * and a warning on stderr for each card that cannot be read or does not parse, placed at its URL
 * in the file, saying that apply will refuse that agent. Raises nothing.
 */
export async function showRemoteCards(file: string, cards: readonly RemoteAgentCard[], io: Pick<CliIo, 'stderr'>, out: (text: string) => void): Promise<void> {
  const lines = cards.flatMap((entry) => cardLine(entry) ?? []);
  if (lines.length > 0) out(['', 'Remote A2A agents (from their Agent Cards):', ...lines].join('\n'));
  for (const entry of cards) {
    if (entry.verdict.ok) continue;
    io.stderr(`warning: ${await entryPlace(file, entry)}: ${entry.address}: ${entry.verdict.problem}; apply refuses to create or change this agent until its card parses (invalid_agent_card)`);
  }
}

/** A card's verdict as `plan --json` gives it: the card's summary, or null and the problem. */
export function cardJson(entry: RemoteAgentCard): Record<string, unknown> {
  return { address: entry.address, url: entry.url, card_url: entry.verdict.cardUrl, ...(entry.verdict.ok ? { card: entry.verdict.card } : { card: null, problem: entry.verdict.problem }) };
}
