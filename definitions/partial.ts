/**
 * The cross-reference rules of a definition that failed its schema, so that `validate` reports
 * every problem of a file at once: the schema's and the cross-references' together.
 *
 * The rules of `semantics.ts` need typed data, so they run on a *partial* definition built from
 * the parts of the document that do pass the schema, each checked on its own: a team whose
 * agent has a bad provider still has its names and edges checked. A part whose only mistakes are
 * harmless to the other checks — a number out of its range, an unknown key, an optional setting
 * that names nothing (`repair.ts`) — is taken whole, as if they were fixed: a pipeline with
 * `maxIterations: 0` still has its expressions, participants and reply schemas checked. What cannot be checked
 * honestly is left out rather than guessed: a part that fails is replaced by an empty
 * placeholder at the same index (so every path still points at the right place), and the
 * problems the placeholders would cause are dropped — a team that lost a participant gets no
 * edge or approver problems, a pipeline on such a team no participant or edge problems, a schedule of a
 * broken pipeline no input problems.
 */
import { PipelineDefinitionSchema, ScheduleDefinitionSchema } from './pipeline-schema.ts';
import type { PipelineDefinition, ScheduleDefinition } from './pipeline-schema.ts';
import type { PathProblem, PathSegment } from './problems.ts';
import { AgentDefinitionSchema, EdgeDefinitionSchema, HumanDefinitionSchema, OrganizationDefinitionSchema, TeamDefinitionSchema } from './schema.ts';
import type { Definition, EdgeDefinition, TeamDefinition } from './schema.ts';
import { parseRepaired } from './repair.ts';
import { checkDefinition } from './semantics.ts';

/** A usable name of a raw element: a non-empty string of at most 100 characters, trimmed. */
function nameOf(raw: unknown): string | undefined {
  const name = raw !== null && typeof raw === 'object' ? (raw as { name?: unknown }).name : undefined;
  return typeof name === 'string' && name.trim() !== '' && name.trim().length <= 100 ? name.trim() : undefined;
}

/** The elements of a raw list, or none when it is not a list. */
function listOf(raw: unknown, key: string): unknown[] {
  const value = raw !== null && typeof raw === 'object' ? (raw as Record<string, unknown>)[key] : undefined;
  return Array.isArray(value) ? value : [];
}

/** What the partial definition could not take whole, by index. */
interface Gaps {
  /** Teams that lost a participant, an edge or themselves: their references are not checked. */
  opaqueTeams: Set<string>;
  /** Indexes of teams replaced by a placeholder. */
  placeholderTeams: Set<number>;
  /** Names of pipelines replaced by a placeholder (schedules of them are not checked). */
  opaquePipelines: Set<string>;
  placeholderPipelines: Set<number>;
  placeholderSchedules: Set<number>;
}

/** A team from raw data: whole when it passes, else the participants and edges that pass on their own. */
function partialTeam(raw: unknown, index: number, gaps: Gaps): TeamDefinition {
  const whole = parseRepaired(TeamDefinitionSchema, raw);
  if (whole) return whole;
  const name = nameOf(raw);
  if (name === undefined) {
    gaps.placeholderTeams.add(index);
    return { name: `\u0000team ${index}`, agents: [], humans: [], edges: [] };
  }
  // Participants keep their names even when another field is wrong: edges and steps naming them are still checked.
  const participants = (key: 'agents' | 'humans') =>
    listOf(raw, key).flatMap((item) => {
      const parsed = parseRepaired<{ name: string }>(key === 'agents' ? AgentDefinitionSchema : HumanDefinitionSchema, item);
      if (parsed) return [key === 'agents' ? (parsed as TeamDefinition['agents'][number]) : { name: parsed.name }];
      const itemName = nameOf(item);
      return itemName === undefined ? [] : [{ name: itemName }];
    });
  const edges = listOf(raw, 'edges').flatMap((item) => {
    const parsed = EdgeDefinitionSchema.safeParse(item);
    return parsed.success ? [parsed.data as EdgeDefinition] : [];
  });
  return { name, agents: participants('agents'), humans: participants('humans'), edges };
}

/** Whether every participant and edge of the raw team made it into the partial one. */
function complete(raw: unknown, team: TeamDefinition): boolean {
  return listOf(raw, 'agents').length === team.agents.length && listOf(raw, 'humans').length === team.humans.length && listOf(raw, 'edges').length === team.edges.length;
}

/** Whether a problem's path starts with `prefix`. */
function under(problem: PathProblem, prefix: readonly PathSegment[]): boolean {
  return prefix.every((segment, i) => problem.path[i] === segment);
}

/**
 * The cross-reference problems of a document that failed the schema, found on the parts of it
 * that pass (see the module comment). Input: the parsed YAML data. Output: problems with paths
 * into the document; none when the document is not a mapping (nothing to cross-check). Raises
 * nothing.
 */
export function partialSemanticProblems(data: unknown): PathProblem[] {
  if (data === null || typeof data !== 'object' || Array.isArray(data)) return [];
  const gaps: Gaps = { opaqueTeams: new Set(), placeholderTeams: new Set(), opaquePipelines: new Set(), placeholderPipelines: new Set(), placeholderSchedules: new Set() };
  const rawTeams = listOf(data, 'teams');
  const teams = rawTeams.map((raw, i) => {
    const team = partialTeam(raw, i, gaps);
    if (!gaps.placeholderTeams.has(i) && !complete(raw, team)) gaps.opaqueTeams.add(team.name);
    return team;
  });
  const pipelines = listOf(data, 'pipelines').map((raw, i) => {
    const parsed = parseRepaired(PipelineDefinitionSchema, raw);
    if (parsed) return parsed;
    gaps.placeholderPipelines.add(i);
    const name = nameOf(raw) ?? `\u0000pipeline ${i}`;
    gaps.opaquePipelines.add(name);
    return { name, team: '', inputs: {}, steps: [] } as unknown as PipelineDefinition;
  });
  const schedules = listOf(data, 'schedules').map((raw, i) => {
    const parsed = parseRepaired(ScheduleDefinitionSchema, raw);
    if (parsed) return parsed;
    gaps.placeholderSchedules.add(i);
    return { name: nameOf(raw) ?? `\u0000schedule ${i}`, pipeline: '', inputs: {} } as unknown as ScheduleDefinition;
  });
  const organization = parseRepaired(OrganizationDefinitionSchema, (data as Record<string, unknown>).organization);
  const definition = { apiVersion: 'teamctl/v1', organization: organization ?? { name: 'organization' }, teams, pipelines, schedules } as Definition;

  const keepName = (p: PathProblem) => p.path.at(-1) === 'name';
  return checkDefinition(definition).filter((problem) => {
    const [kind, index] = problem.path;
    if (typeof index !== 'number') return true;
    if (kind === 'teams') {
      if (gaps.placeholderTeams.has(index)) return false;
      // A team that lost a participant or an edge cannot tell who is missing: neither its edges
      // nor an approver (an agent's `tools.approval.by`, who must be a human on an edge with it) are checked.
      const approver = problem.path[2] === 'agents' && problem.path.slice(4).join('.') === 'tools.approval.by';
      return !(gaps.opaqueTeams.has(teams[index]!.name) && (under(problem, ['teams', index, 'edges']) || approver));
    }
    if (kind === 'pipelines') {
      if (gaps.placeholderPipelines.has(index)) return keepName(problem) && !pipelines[index]!.name.startsWith('\u0000');
      const team = pipelines[index]!.team;
      const teamUnknown = gaps.opaqueTeams.has(team) || [...gaps.placeholderTeams].length > 0 && !teams.some((t) => t.name === team);
      return !(teamUnknown && ['from', 'to', 'team'].includes(String(problem.path.at(-1))));
    }
    if (kind === 'schedules') {
      if (gaps.placeholderSchedules.has(index)) return keepName(problem) && !schedules[index]!.name.startsWith('\u0000');
      return !(gaps.opaquePipelines.has(schedules[index]!.pipeline) && under(problem, ['schedules', index, 'inputs']));
    }
    return true;
  });
}

