/**
 * `teamctl humans invite NAME --team TEAM`: a one-time sign-in link of a human for the console
 * (contract §10, docs/console.md): the way whoever manages a team lets a person in.
 */
import type { Command } from 'commander';
import { InvalidArgumentError } from 'commander';
import ms from 'ms';
import type { Human, TeamGraph } from '../../api/schemas.ts';
import { keyringClient, resolveConnection } from '../context.ts';
import { ExitCodes } from '../errors.ts';
import type { CliIo } from '../io.ts';
import { findTeam, lookUpIn, unknownName } from '../team-lookup.ts';
import { connectionOptions } from './plan-apply.ts';
import type { Runner } from './runner.ts';

/** Bounds of a link's lifetime in seconds (contract §10: 60 s to 7 days). */
const LINK_TTL = { min: 60, max: 604_800 } as const;

/** Parses a link lifetime: whole seconds (`900`) or a duration (`15m`, `24h`, `7d`), 60 s to 7 days. */
export function linkTtlSeconds(value: string): number {
  const millis: number | undefined = /^\d+$/.test(value) ? Number(value) * 1000 : ms(value as ms.StringValue);
  const seconds = typeof millis === 'number' ? millis / 1000 : NaN;
  if (!Number.isInteger(seconds) || seconds < LINK_TTL.min || seconds > LINK_TTL.max) {
    throw new InvalidArgumentError(`not a lifetime of 60 s to 7 days (e.g. 900, 15m, 24h, 7d): ${value}`);
  }
  return seconds;
}

/**
 * The human of the team named `name`. Errors: `name_not_found` with a did-you-mean among the
 * team's humans, or `invalid_usage` when `name` is an agent of the team.
 */
export function findHuman(team: TeamGraph, name: string): Human {
  const human = team.humans.find((h) => h.name === name);
  if (human) return human;
  if (team.agents.some((a) => a.name === name)) throw unknownName('human', name, team.humans.map((h) => h.name), `in team ${team.team_name} (it is an agent: agents connect with teamctl mcp config)`, 'its humans');
  throw unknownName('human', name, team.humans.map((h) => h.name), `in team ${team.team_name}`, 'its humans');
}

/**
 * Registers `humans invite`: creates a one-time sign-in link for the human NAME of team TEAM
 * (`POST /api/v1/humans/{human_id}/sign-in-links`) and prints its URL alone on stdout (so it can
 * be piped into a mail), when it expires on stderr; `--json` prints `{url, expires_at, human_id}`.
 * `--ttl` sets how long it works (default 15m; 60 s to 7 days). Errors: `name_not_found` (team or
 * human), `invalid_usage` (the team name is in several organizations: `--org`), the service's.
 */
export function registerHumans(program: Command, io: CliIo, run: Runner): void {
  const humans = program.command('humans').description('The humans of a team, as people: sign-in links to the console.');
  connectionOptions(
    humans
      .command('invite')
      .description("Print a one-time sign-in link of the human for the console (acs-server serves it at /): its page's button signs the browser in; it works once, until it expires.")
      .argument('<name>', 'the human, by name')
      .requiredOption('--team <name>', 'team name')
      .option('--org <name>', 'organization name (when the team name is not unique)')
      .option('--ttl <duration>', 'how long the link works: seconds or 15m, 24h, 7d (60 s to 7 days)', linkTtlSeconds, 900)
      .option('--json', 'print {"url", "expires_at", "human_id"} as JSON'),
  ).action((name: string, opts: { team: string; org?: string; ttl: number; json?: boolean; baseUrl?: string; apiKeyEnv?: string[] }) =>
    run(async () => {
      const client = keyringClient(resolveConnection(opts, io.env), io.env);
      const team = await findTeam(client, opts.team, opts.org);
      const human = await lookUpIn(client, team, name, () => findHuman(team, name), { noun: 'human', teamFrom: 'flag' });
      const link = await client.createSignInLink(human.human_id, { ttlSeconds: opts.ttl });
      if (opts.json) {
        io.stdout(JSON.stringify(link, null, 2));
      } else {
        io.stdout(link.url);
        io.stderr(
          `Sign-in link for ${human.name} of team ${team.team_name}: it works once, until ${link.expires_at}. Send it to them privately: it opens a page whose Sign in button signs that browser in as ${human.name}.`,
        );
      }
      return ExitCodes.ok;
    }),
  );
}
