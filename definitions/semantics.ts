/**
 * Rules of a definition that span several fields, checked after the schema passes and before
 * anything is sent to the service, so that a plan never starts from a definition the service
 * would reject halfway through an apply.
 */
import { closestMatch } from './did-you-mean.ts';
import { checkRemoteAgents } from './a2a-semantics.ts';
import { checkAgentTools } from './agent-tools-semantics.ts';
import { checkPipelines } from './pipeline-semantics.ts';
import type { PathProblem } from './problems.ts';
import type { Definition, TeamDefinition } from './schema.ts';

/** Participant names of a team, with where each was first defined. */
function participants(team: TeamDefinition, teamIndex: number, problems: PathProblem[]): Map<string, string> {
  const seen = new Map<string, string>();
  const add = (kind: 'agents' | 'humans', name: string, index: number) => {
    const first = seen.get(name);
    if (first !== undefined) {
      problems.push({
        path: ['teams', teamIndex, kind, index, 'name'],
        target: 'value',
        message: `duplicate participant name ${JSON.stringify(name)} in team ${team.name} (first used by ${first}; agents and humans share one namespace)`,
      });
    } else {
      seen.set(name, `${kind}[${index}]`);
    }
  };
  team.agents.forEach((agent, i) => add('agents', agent.name, i));
  team.humans.forEach((human, i) => add('humans', human.name, i));
  return seen;
}

/**
 * Agents with a model need a provider (an external agent runs no model in the service), and a
 * provider other than echo needs a model (the service refuses such an agent, contract §8).
 */
function checkAgents(team: TeamDefinition, teamIndex: number, problems: PathProblem[]): void {
  team.agents.forEach((agent, i) => {
    // A remote A2A agent's model is refused by checkRemoteAgents, with its own reason.
    if (agent.model !== undefined && agent.provider === undefined && agent.a2a === undefined) {
      problems.push({
        path: ['teams', teamIndex, 'agents', i, 'model'],
        target: 'value',
        message: 'a model needs a provider; an agent without a provider is external (MCP) and runs no model',
      });
    }
    if (agent.provider !== undefined && agent.provider !== 'echo' && agent.model === undefined) {
      problems.push({
        path: ['teams', teamIndex, 'agents', i, 'provider'],
        target: 'value',
        message: `provider ${agent.provider} needs a model (add model: …; only echo runs without one)`,
      });
    }
  });
}

/** Edges join two different existing participants of the team, each pair at most once. */
function checkEdges(team: TeamDefinition, teamIndex: number, names: Map<string, string>, problems: PathProblem[]): void {
  const pairs = new Map<string, number>();
  team.edges.forEach((edge, i) => {
    const path = ['teams', teamIndex, 'edges', i];
    let known = true;
    edge.forEach((name, end) => {
      if (names.has(name)) return;
      known = false;
      const match = closestMatch(name, [...names.keys()]);
      problems.push({
        path: [...path, end],
        target: 'value',
        message: `unknown participant ${JSON.stringify(name)} in team ${team.name}${match === undefined ? '' : ` (did you mean ${JSON.stringify(match)}?)`}`,
      });
    });
    if (!known) return;
    const [a, b] = edge;
    if (a === b) {
      problems.push({ path, target: 'value', message: `an edge cannot join ${JSON.stringify(a)} to itself` });
      return;
    }
    // Edges are undirected in the service: [a, b] and [b, a] are the same edge.
    const key = JSON.stringify([a, b].sort());
    const first = pairs.get(key);
    if (first !== undefined) {
      problems.push({
        path,
        target: 'value',
        message: `duplicate edge between ${JSON.stringify(a)} and ${JSON.stringify(b)} (same as edges[${first}]; edges have no direction)`,
      });
    } else {
      pairs.set(key, i);
    }
  });
}

/**
 * `renamedFrom` must name a resource that the file no longer names: a name the file keeps (another
 * entry, or the entry itself) would make one live resource the match of two entries. Two entries
 * may not claim the same old name either. Input: the entries of one scope (the teams, or the
 * participants of one team, agents and humans together) with their paths.
 */
function checkRenames(entries: Array<{ name: string; renamedFrom?: string | undefined; path: Array<string | number> }>, scope: string, problems: PathProblem[]): void {
  const names = new Set(entries.map((e) => e.name));
  const claimed = new Map<string, string>();
  for (const entry of entries) {
    if (entry.renamedFrom === undefined) continue;
    const path = [...entry.path, 'renamedFrom'];
    const where = entry.path.slice(-2).join('[') + ']';
    if (names.has(entry.renamedFrom)) {
      const what = entry.renamedFrom === entry.name ? 'its own name' : `the name of another entry (${scope} of this file keep it)`;
      problems.push({ path, target: 'value', message: `renamedFrom ${JSON.stringify(entry.renamedFrom)} is ${what}: it must name what the resource was called before` });
    } else if (claimed.has(entry.renamedFrom)) {
      problems.push({ path, target: 'value', message: `renamedFrom ${JSON.stringify(entry.renamedFrom)} is claimed twice (also by ${claimed.get(entry.renamedFrom)})` });
    } else {
      claimed.set(entry.renamedFrom, where);
    }
  }
}

/**
 * Checks the rules that the schema cannot express.
 *
 * Input: a definition that passed the schema. Output: the problems, with paths into the document
 * (empty when there are none): team names unique in the organization; participant names (agents
 * and humans together) unique in a team; edges between existing participants of the same team,
 * no self-edges, no duplicate pairs in either order; no model on an agent without a provider, a
 * model on every agent with a provider other than echo; `renamedFrom` naming no name the file
 * keeps, and claimed once (`checkRenames`); the rules of agents' `tools` (`checkAgentTools`: a
 * provider, an approver who is a human of the team on an edge with the agent, approval tools that
 * exist, unique servers, https URLs); a remote A2A agent's `a2a` without provider, model or
 * tools beside it, its URL https (`checkRemoteAgents`); webhook names unique; and the rules of pipelines and
 * schedules (`checkPipelines`). Raises nothing.
 */
export function checkDefinition(definition: Definition): PathProblem[] {
  const problems: PathProblem[] = [];
  const teams = new Map<string, number>();
  definition.teams.forEach((team, t) => {
    const first = teams.get(team.name);
    if (first !== undefined) {
      problems.push({
        path: ['teams', t, 'name'],
        target: 'value',
        message: `duplicate team name ${JSON.stringify(team.name)} (first used by teams[${first}])`,
      });
    } else {
      teams.set(team.name, t);
    }
    const names = participants(team, t, problems);
    checkAgents(team, t, problems);
    checkEdges(team, t, names, problems);
    checkAgentTools(team, t, problems);
    checkRemoteAgents(team, t, problems);
    checkRenames(
      [...team.agents.map((a, i) => ({ ...a, path: ['teams', t, 'agents', i] })), ...team.humans.map((h, i) => ({ ...h, path: ['teams', t, 'humans', i] }))],
      `the participants of team ${team.name}`,
      problems,
    );
  });
  checkRenames(
    definition.teams.map((team, t) => ({ name: team.name, renamedFrom: team.renamedFrom, path: ['teams', t] })),
    'the teams',
    problems,
  );
  const webhooks = definition.organization.webhooks ?? [];
  const hooks = new Map<string, number>();
  webhooks.forEach((hook, w) => {
    const first = hooks.get(hook.name);
    if (first !== undefined) {
      problems.push({ path: ['organization', 'webhooks', w, 'name'], target: 'value', message: `duplicate webhook name ${JSON.stringify(hook.name)} (first used by webhooks[${first}])` });
    } else {
      hooks.set(hook.name, w);
    }
  });
  checkRenames(
    webhooks.map((hook, w) => ({ name: hook.name, renamedFrom: hook.renamedFrom, path: ['organization', 'webhooks', w] })),
    'the webhooks',
    problems,
  );
  problems.push(...checkPipelines(definition));
  return problems;
}
