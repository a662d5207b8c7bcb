/**
 * The rules of a remote A2A agent (`a2a`, contract §12) that span keys, checked on a definition
 * that passed the schema so that `validate` finds, with their places, what the service would
 * refuse halfway through an apply (400 `invalid_request`: an agent with both a provider and
 * `a2a`, or `tools` on a remote agent; `webhook_url_refused`: a URL that is not https).
 */
import { maxMcpHeaders } from '../api/agent-tools.ts';
import { isLoopbackUrl } from './agent-tools-semantics.ts';
import type { PathProblem, PathSegment } from './problems.ts';
import type { TeamDefinition } from './schema.ts';

/** The keys a remote A2A agent may not have beside `a2a`: it runs no model and calls no tools of ours. */
const LOCAL_ONLY = ['provider', 'model', 'tools'] as const;

/**
 * Checks every agent of a team that has `a2a`. Problems, each at the key it concerns: `provider`,
 * `model` or `tools` beside `a2a` (a remote agent runs its own model and tools); a URL that is not
 * https (plain http is allowed for a loopback host, with a note that the server needs
 * `--webhook-allow-private`); a header named twice in another case, or more than
 * {@link maxMcpHeaders} headers. Input: the team and its index. Raises nothing.
 */
export function checkRemoteAgents(team: TeamDefinition, teamIndex: number, problems: PathProblem[]): void {
  team.agents.forEach((agent, i) => {
    const a2a = agent.a2a;
    if (a2a === undefined) return;
    const at = (...rest: PathSegment[]): PathSegment[] => ['teams', teamIndex, 'agents', i, ...rest];
    for (const key of LOCAL_ONLY) {
      if (agent[key] === undefined) continue;
      problems.push({
        path: at(key),
        target: 'key',
        message: `agent ${JSON.stringify(agent.name)} has a2a: it is a remote A2A agent, which runs its own model and tools, and takes no ${key} (remove ${key}, or remove a2a to run a model in the service)`,
      });
    }
    if (a2a.url.startsWith('http:') && !isLoopbackUrl(a2a.url)) {
      problems.push({
        path: at('a2a', 'url'),
        target: 'value',
        message: 'must be https: plain http is accepted only for a loopback host (localhost, 127.0.0.0/8, ::1), for development, with a server run with --webhook-allow-private',
      });
    }
    const headers = Object.keys(a2a.headers ?? {});
    if (headers.length > maxMcpHeaders) problems.push({ path: at('a2a', 'headers'), target: 'key', message: `at most ${maxMcpHeaders} headers, got ${headers.length}` });
    const byLowerCase = new Map<string, string>();
    for (const header of headers) {
      const other = byLowerCase.get(header.toLowerCase());
      if (other !== undefined) {
        problems.push({ path: at('a2a', 'headers', header), target: 'key', message: `header ${JSON.stringify(header)} is named twice (also as ${JSON.stringify(other)}; header names are case-insensitive)` });
      } else {
        byLowerCase.set(header.toLowerCase(), header);
      }
    }
  });
}
