/** `teamctl get usage`: tokens the provider agents of a team spent, and their daily budgets. */
import type { Command } from 'commander';
import { Option } from 'commander';
import ms from 'ms';
import type { AgentUsage, TeamUsage } from '../../api/schemas.ts';
import { keyringClient, resolveConnection } from '../context.ts';
import { ExitCodes } from '../errors.ts';
import type { CliIo } from '../io.ts';
import { counted } from '../render.ts';
import { agentIn, findTeam } from '../team-lookup.ts';
import { connectionOptions } from './plan-apply.ts';
import type { Runner } from './runner.ts';
import { parseInstant } from './schedules.ts';

/**
 * Parses `--since`: a duration back from `now` (`90m`, `24h`, `7d`) or an ISO 8601 time (a date
 * alone is midnight UTC; a time needs `Z` or an offset). Output: the instant as ISO 8601 UTC.
 * Errors: `invalid_usage` naming the flag.
 */
export function parseSince(text: string, now = Date.now()): string {
  if (/^\d+(?:\.\d+)?\s*[a-z]+$/i.test(text)) {
    const span = ms(text as ms.StringValue);
    if (typeof span === 'number' && Number.isFinite(span) && span > 0) return new Date(now - span).toISOString();
  }
  return parseInstant('--since', text).toISOString();
}

/** Columns of one agent's line; `name` is the agent's, or `(deleted)`. */
function row(agent: AgentUsage): string[] {
  const models = agent.by_model.map((m) => `${m.provider}/${m.model}`).join(', ') || '-';
  const budget = agent.max_tokens_per_day === null ? `${agent.tokens_today} / unlimited` : `${agent.tokens_today} / ${agent.max_tokens_per_day}`;
  const spent = agent.budget_exhausted_until ? `spent until ${agent.budget_exhausted_until}` : '';
  return [agent.name ?? '(deleted)', models, String(agent.calls), String(agent.input_tokens), String(agent.output_tokens), String(agent.total_tokens), budget, spent];
}

/** Lines of a table: a header, one line per row, columns padded to their widest cell. */
function table(header: string[], rows: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  return [header, ...rows].map((cells) => cells.map((c, i) => c.padEnd(widths[i]!)).join('  ').trimEnd()).join('\n');
}

/** Totals of a window: a team's or one agent's. */
type Totals = Pick<TeamUsage, 'since' | 'calls' | 'input_tokens' | 'output_tokens' | 'total_tokens'>;

/**
 * Usage as a table (one line per agent) with a totals line: for the team, or, given `agentName`
 * (`--agent`), for that one agent, which the line names.
 */
export function renderUsage(teamName: string, usage: Totals, agents: AgentUsage[], agentName?: string): string {
  const header = ['AGENT', 'MODELS', 'CALLS', 'INPUT', 'OUTPUT', 'TOTAL', 'TODAY / BUDGET', ''];
  const lines = table(header, agents.map(row));
  const whose = agentName === undefined ? `Team ${teamName}` : `Agent ${agentName} of team ${teamName}`;
  const total = `${whose} since ${usage.since}: ${counted(usage.calls, 'call')}, ${usage.input_tokens} input + ${usage.output_tokens} output = ${counted(usage.total_tokens, 'token')}.`;
  return agents.length === 0 ? `${total}\n(no agent with a provider)` : `${lines}\n\n${total}`;
}

/**
 * Registers `get usage` on the `get` command group: `--team T [--agent A] [--org O] [--since
 * 24h|ISO] [-o table|json]`. Reads `GET /teams/{team_id}/usage` (or, with `--agent`, that
 * agent's entry from `GET /agents/{agent_id}/usage`) and prints a table (agents, models, calls,
 * input/output/total tokens, today's tokens against the budget, "spent until" while a budget is
 * spent) or the service's JSON. Errors: `name_not_found` (unknown team or agent, with did-you-mean),
 * `invalid_usage` (bad `--since`, a human named as the agent),
 * the service's codes.
 */
export function registerGetUsage(get: Command, io: CliIo, run: Runner): void {
  connectionOptions(
    get
      .command('usage')
      .description("Tokens a team's provider agents spent (from the providers' own counts) and their daily budgets.")
      .requiredOption('--team <name>', 'the team')
      .option('--agent <name>', 'only this agent')
      .option('--org <name>', 'the organization of the team (when the name is in several)')
      .option('--since <when>', 'from when: a duration back from now (24h, 7d) or an ISO 8601 time (default: the start of the current UTC day)')
      .addOption(new Option('-o, --output <format>', 'output format').choices(['table', 'json']).default('table')),
  ).action((opts: { team: string; agent?: string; org?: string; since?: string; output: 'table' | 'json'; baseUrl?: string; apiKeyEnv?: string[] }) =>
    run(async () => {
      const since = opts.since === undefined ? undefined : parseSince(opts.since);
      const client = keyringClient(resolveConnection(opts, io.env), io.env);
      const team = await findTeam(client, opts.team, opts.org);
      const query = since === undefined ? {} : { since };
      if (opts.agent !== undefined) {
        const agent = await agentIn(client, team, opts.agent);
        const usage = await client.getAgentUsage(agent.agent_id, query);
        if (opts.output === 'json') io.stdout(JSON.stringify(usage, null, 2));
        else io.stdout(renderUsage(team.team_name, usage, [usage], agent.name));
        return ExitCodes.ok;
      }
      const usage = await client.getTeamUsage(team.team_id, query);
      io.stdout(opts.output === 'json' ? JSON.stringify(usage, null, 2) : renderUsage(team.team_name, usage, usage.agents));
      return ExitCodes.ok;
    }),
  );
}
