/**
 * `teamctl events tail`: follows an organization's event log over Server-Sent Events (contract
 * §9, `GET …/events/stream`), as `kubectl get -w` follows a resource: one line per event as it is
 * written, participants and teams by name, until Ctrl-C (exit 0). The stream reconnects from the
 * last event it printed when the connection drops (`client/event-stream.ts`), so nothing is
 * missed or printed twice.
 */
import type { Command } from 'commander';
import { Option } from 'commander';
import { EventTypeFilter } from '../../api/events.ts';
import type { Event } from '../../api/events.ts';
import type { TeamGraph } from '../../api/schemas.ts';
import type { AcsClient } from '../../client/acs-client.ts';
import { ToolkitError } from '../../errors/catalogue.ts';
import { keyringClient, resolveConnection } from '../context.ts';
import { ExitCodes } from '../errors.ts';
import type { CliIo } from '../io.ts';
import { untilStopped } from '../signals.ts';
import { findOrganizations, findTeam, participantNames } from '../team-lookup.ts';
import { connectionOptions } from './plan-apply.ts';
import type { Runner } from './runner.ts';

/** How much of a message's content a line shows. */
const CONTENT_CHARS = 80;

/**
 * Text from the service shown, never obeyed: control characters (C0 but tab and newline, DEL,
 * C1) as their `\uXXXX` escapes, so an event's content cannot move the cursor or rewrite lines.
 * Every line `events tail` prints goes through here.
 */
export function printableText(text: string): string {
  return text.replace(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * The names of an organization's teams and participants by id, kept current from the events
 * themselves (a participant created or renamed while tailing is named from then on), and read from
 * the service for an id it has not seen (once per team).
 */
export class NameBook {
  readonly #names = new Map<string, string>();
  readonly #teams = new Map<string, string>();
  readonly #read = new Set<string>();
  readonly #client: AcsClient;
  constructor(client: AcsClient) {
    this.#client = client;
  }

  /** Takes the names of a team's graph. */
  learnTeam(team: Pick<TeamGraph, 'team_id' | 'team_name'> & Partial<Pick<TeamGraph, 'agents' | 'humans'>>): void {
    this.#teams.set(team.team_id, team.team_name);
    if (team.agents && team.humans) {
      for (const [id, name] of participantNames({ agents: team.agents, humans: team.humans })) this.#names.set(id, name);
      this.#read.add(team.team_id);
    }
  }

  /** Takes what an event says of names (a created or updated team, agent or human). */
  learn(event: Event): void {
    switch (event.type) {
      case 'team.created':
      case 'team.updated':
        this.#teams.set(event.data.team_id, event.data.team_name);
        break;
      case 'agent.created':
      case 'agent.updated':
        this.#names.set(event.data.agent_id, event.data.name);
        break;
      case 'human.created':
      case 'human.updated':
        this.#names.set(event.data.human_id, event.data.name);
        break;
      default:
        break;
    }
  }

  /** Reads the graph of `teamId` once, when an id of it is not known yet. Errors are swallowed: ids are shown instead. */
  async ensure(teamId: string | null, ids: readonly string[]): Promise<void> {
    if (!teamId || this.#read.has(teamId) || ids.every((id) => this.#names.has(id))) return;
    this.#read.add(teamId);
    try {
      this.learnTeam(await this.#client.getTeam(teamId));
    } catch {
      // A team deleted meanwhile: its ids stay ids.
    }
  }

  /** The name of a participant, or its id when unknown. */
  name(id: string): string {
    return this.#names.get(id) ?? id;
  }

  /** The name of a team, or its id when unknown. */
  team(id: string | null): string {
    return id === null ? '-' : (this.#teams.get(id) ?? id);
  }
}

/** The participant ids an event mentions (to name them). */
function participantsOf(event: Event): string[] {
  switch (event.type) {
    case 'message.created':
      return [event.data.sender_id, event.data.recipient_id];
    case 'thread.opened':
      return [...event.data.participants];
    case 'edge.created':
    case 'edge.updated':
      return [...event.data.participants];
    case 'tool_call.started':
    case 'tool_call.finished':
      return [event.data.agent_id, ...(event.data.waiting_on ? [event.data.waiting_on.participant_id] : [])];
    case 'task.created':
    case 'task.updated':
      return [event.data.requester_id, event.data.assignee_id];
    default:
      return [];
  }
}

/** A content shortened to one line. */
function excerpt(content: string): string {
  const flat = content.replace(/\s+/g, ' ').trim();
  return JSON.stringify(flat.length > CONTENT_CHARS ? `${flat.slice(0, CONTENT_CHARS - 1)}…` : flat);
}

/** What an event is about, in words, names for ids. */
export function summary(event: Event, names: NameBook): string {
  switch (event.type) {
    case 'message.created': {
      const d = event.data;
      return `${names.name(d.sender_id)} -> ${names.name(d.recipient_id)}: ${excerpt(d.content)}  thread ${d.thread_id}${d.expects_reply ? '  (expects a reply)' : ''}`;
    }
    case 'thread.opened': {
      const [a, b] = event.data.participants;
      return `${names.name(a)} <-> ${names.name(b)}  thread ${event.data.thread_id}${event.data.subject ? `  ${JSON.stringify(event.data.subject)}` : ''}`;
    }
    case 'team.created':
    case 'team.updated':
      return event.data.team_name;
    case 'agent.created':
    case 'agent.updated':
      return `${event.data.name}${event.data.provider ? ` (${event.data.provider})` : ' (external)'}${event.data.status === 'paused' ? ', paused' : ''}`;
    case 'human.created':
    case 'human.updated':
      return event.data.name;
    case 'edge.created':
    case 'edge.updated': {
      const [a, b] = event.data.participants;
      return `${names.name(a)} <-> ${names.name(b)}`;
    }
    case 'team.deleted':
      return names.team(event.data.team_id ?? null);
    case 'agent.deleted':
      return names.name(event.data.agent_id ?? '');
    case 'human.deleted':
      return names.name(event.data.human_id ?? '');
    case 'edge.deleted':
      return event.data.edge_id ?? '';
    case 'tool_call.started':
    case 'tool_call.finished': {
      const d = event.data;
      const tool = d.server === null ? d.tool : `${d.server}.${d.tool}`;
      const asked = d.waiting_on ? ` -> ${names.name(d.waiting_on.participant_id)}` : '';
      return `${names.name(d.agent_id)} ${tool}${asked}: ${d.status}${d.error ? ` (${d.error.split(':')[0]})` : ''}  thread ${d.thread_id}`;
    }
    case 'task.created':
    case 'task.updated': {
      const d = event.data;
      return `${names.name(d.requester_id)} -> ${names.name(d.assignee_id)}: ${d.state}${d.title ? `  ${JSON.stringify(d.title)}` : ''}  task ${d.task_id}`;
    }
  }
}

/** One event as a line: `SEQ  TIME  TYPE  TEAM  what`, every piece printable. */
export function eventLine(event: Event, names: NameBook): string {
  return printableText(`${event.seq}  ${event.created_at}  ${event.type}  ${names.team(event.team_id)}  ${summary(event, names)}`);
}

/** One event as a JSON line: the event as the service wrote it, with `names` of the participants and team it mentions. */
export function eventJson(event: Event, names: NameBook): string {
  const ids = participantsOf(event);
  const named = Object.fromEntries([...ids.map((id) => [id, names.name(id)]), ...(event.team_id ? [[event.team_id, names.team(event.team_id)]] : [])]);
  return printableText(JSON.stringify({ ...event, names: named }));
}

/**
 * What `events tail` says on stderr of its connection (stdout keeps the events alone): once when
 * it lost the server and is reconnecting — `events tail: lost ACS at URL (why); reconnecting every
 * second from after event N (Ctrl-C stops)` — and once when the stream is back. Failed reconnects
 * in between say nothing more, so a server down for an hour is one line, not 3,600.
 */
export class ConnectionNotes {
  readonly #io: Pick<CliIo, 'stderr'>;
  readonly #baseUrl: string;
  #lost = false;
  #lastSeq: number | undefined;
  constructor(io: Pick<CliIo, 'stderr'>, baseUrl: string) {
    this.#io = io;
    this.#baseUrl = baseUrl;
  }

  /** The stream is open after `afterSeq` (the service's `connected after` comment). */
  connected(afterSeq: number): void {
    this.#lastSeq ??= afterSeq;
    if (!this.#lost) return;
    this.#lost = false;
    this.#io.stderr(`events tail: reconnected to ACS at ${this.#baseUrl}; resuming after event ${afterSeq}, none missed`);
  }

  /** An event was printed. */
  printed(seq: number): void {
    this.#lastSeq = seq;
  }

  /** The connection was lost (or a reconnect failed) for `why`; a reconnect follows. */
  lost(why: string): void {
    if (this.#lost) return;
    this.#lost = true;
    const from = this.#lastSeq === undefined ? '' : ` from after event ${this.#lastSeq}`;
    this.#io.stderr(`events tail: lost ACS at ${this.#baseUrl} (${why}); reconnecting every second${from} (Ctrl-C stops)`);
  }
}

/** Parses `--types`: comma-separated event types or families (`message.*`). Errors: `invalid_usage`. */
function parseTypes(text: string): string[] {
  const types = text.split(',').map((t) => t.trim()).filter(Boolean);
  for (const type of types) {
    if (!EventTypeFilter.safeParse(type).success) throw new ToolkitError('invalid_usage', `--types: ${JSON.stringify(type)} is not an event type or family (message.created, message.*, thread.opened, team.*, agent.*, human.*, edge.*)`);
  }
  if (types.length === 0) throw new ToolkitError('invalid_usage', '--types: give at least one event type');
  return types;
}

/**
 * Registers `teamctl events tail [--org NAME] [--team NAME] [--types T,…] [--after SEQ] [--json]`:
 * prints each event of the organization's log as it is written (from `--after` when given), one
 * line each (`--json`: one JSON object per line, with a `names` map), until SIGINT or SIGTERM
 * (exit 0). The organization is `--org`, else the team's (`--team`), else the only one the key
 * reaches. Errors: `name_not_found` (organization, team), `invalid_usage` (several organizations
 * and no `--org`; a bad `--types`), `events_expired` (an `--after` older than the log keeps),
 * `invalid_cursor`, `too_many_waits`.
 */
export function registerEvents(program: Command, io: CliIo, run: Runner): void {
  const events = program.command('events').description("Read an organization's event log (contract §9).");
  connectionOptions(
    events
      .command('tail')
      .description("Follow an organization's events as they are written (Server-Sent Events), one line each with names, until Ctrl-C.")
      .option('--org <name>', 'the organization (default: the team\'s, or the only one the key reaches)')
      .option('--team <name>', "only this team's events")
      .option('--types <types>', 'only these event types, comma-separated; family.* for a family (message.*,thread.opened)')
      .addOption(new Option('--after <seq>', 'print the events after this seq first (default: only new ones)').argParser((v) => {
        const n = Number(v);
        if (!Number.isInteger(n) || n < 0) throw new ToolkitError('invalid_usage', `--after: not a seq (an integer, 0 or more): ${v}`);
        return n;
      }))
      .option('--json', 'one JSON object per line: the event, with a names map of the ids it mentions'),
  ).action((opts: { org?: string; team?: string; types?: string; after?: number; json?: boolean; baseUrl?: string; apiKeyEnv?: string[] }) =>
    run(async () => {
      const types = opts.types === undefined ? undefined : parseTypes(opts.types);
      const client = keyringClient(resolveConnection(opts, io.env), io.env);
      const names = new NameBook(client);
      let orgId: string;
      let teamId: string | undefined;
      if (opts.team !== undefined) {
        const team = await findTeam(client, opts.team, opts.org);
        names.learnTeam(team);
        orgId = team.org_id;
        teamId = team.team_id;
      } else {
        const orgs = await findOrganizations(client, opts.org);
        if (orgs.length !== 1) throw new ToolkitError('invalid_usage', `the key reaches ${orgs.length} organizations (${orgs.map((o) => o.org_name).join(', ')}); pass --org`);
        orgId = orgs[0]!.org_id;
      }
      if (teamId === undefined) for (const team of await client.listTeams(orgId)) names.learnTeam(team);
      const connection = new ConnectionNotes(io, client.baseUrl);
      await untilStopped(async (stop) => {
        try {
          const stream = client.streamEvents(orgId, {
            types,
            teamId,
            after: opts.after,
            signal: stop,
            onConnected: (afterSeq) => connection.connected(afterSeq),
            onDisconnected: (why) => connection.lost(why),
          });
          for await (const event of stream) {
            connection.printed(event.seq);
            names.learn(event);
            await names.ensure(event.team_id, participantsOf(event));
            io.stdout(opts.json ? eventJson(event, names) : eventLine(event, names));
          }
        } catch (error) {
          if (!stop.aborted) throw error;
        }
      });
      return ExitCodes.ok;
    }),
  );
}
