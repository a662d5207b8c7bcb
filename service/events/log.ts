/**
 * The organization event log in storage (contract §9; migration `0011_events`): appending an
 * event inside the transaction of the change that causes it, and reading the log by `seq`.
 *
 * Why readers never miss an event and never see one twice: writers only insert events, without a
 * number; the sequencer (sequencer.ts) numbers committed events afterwards, one organization at a
 * time under its counter row's lock, which it holds until its numbers are visible. So the
 * numbered events of an organization are always exactly 1…N, and a reader walking `seq > after`
 * sees each once. `thread.opened` and `message.created` are written by deferred triggers at
 * commit; the other types by {@link appendEvent}.
 */
import { ServiceError } from '../../errors/catalogue.ts';
import type { Event, EventType } from '../../api/events.ts';
import type { Queryable } from '../storage/db.ts';
import { iso } from '../domain/ids.ts';

/** An event as stored and handed to readers in this process: the wire shape (contract §9). */
export type StoredEvent = Event;

/** What {@link appendEvent} writes: the organization, team and type, and the data (never a key). */
export interface NewEvent {
  orgId: string;
  teamId: string | null;
  type: EventType;
  data: Record<string, unknown>;
}

/**
 * Writes one event of its organization in `tx` (not yet numbered: announce the organization after
 * the commit, `deps.events.announce(orgId)`, and the sequencer numbers it). Takes no lock.
 * Output: the event id.
 */
export async function appendEvent(tx: Queryable, event: NewEvent): Promise<string> {
  const rows = await tx.query<{ event_id: string }>(`SELECT acs_append_event($1, $2, $3, $4::json) AS event_id`, eventParams(event));
  return rows[0]!.event_id;
}

/** The parameters of `acs_append_event` for `event`, in its order. */
function eventParams(event: NewEvent): unknown[] {
  return [event.orgId, event.teamId, event.type, JSON.stringify(event.data)];
}

/**
 * Runs `insert` (an `INSERT … ` without `RETURNING`, its parameters `params`) and, when it inserted
 * its row, writes `event` with it, in one statement: a create then takes one round trip fewer
 * than an insert followed by {@link appendEvent}. The event's data is made before the row exists,
 * so the caller builds it from what it inserts (ids, values, and the transaction's `now()`, which
 * every default `now()` of the transaction equals); `wire` maps the stored row to its API form,
 * which must be the event's data. Output: the inserted row, or undefined when the insert inserted
 * nothing (`ON CONFLICT DO NOTHING`, a false `WHERE`): no event is written then.
 * Errors: throws (a bug, not a client's error) when the stored row's API form is not the event's data.
 */
export async function insertWithEvent<T>(tx: Queryable, insert: string, params: unknown[], event: NewEvent, wire: (row: T) => unknown): Promise<T | undefined> {
  const n = params.length;
  const rows = await tx.query<T & { event_id: string }>(
    `WITH made AS (${insert} RETURNING *) SELECT made.*, acs_append_event($${n + 1}, $${n + 2}, $${n + 3}, $${n + 4}::json) AS event_id FROM made`,
    [...params, ...eventParams(event)],
  );
  if (!rows[0]) return undefined;
  const { event_id: _eventId, ...stored } = rows[0];
  const row = stored as T;
  if (JSON.stringify(wire(row)) !== JSON.stringify(event.data)) throw new Error(`${event.type}: the event written differs from the row stored`);
  return row;
}

/** An event row as `SELECT … FROM events` returns it. */
export interface EventRow {
  org_id: string;
  seq: string | number;
  event_id: string;
  type: string;
  team_id: string | null;
  data: Record<string, unknown>;
  created_at: Date | string;
}

/** The columns of {@link EventRow}, for the statements that read events. */
export const eventColumns = 'org_id, seq, event_id, type, team_id, data, created_at';

/** Maps a stored event to its wire form (contract §9). */
export function toEvent(row: EventRow): StoredEvent {
  return {
    event_id: row.event_id,
    seq: Number(row.seq),
    type: row.type,
    org_id: row.org_id,
    team_id: row.team_id,
    created_at: iso(row.created_at),
    data: row.data,
  } as StoredEvent;
}

/** Which events a reader wants: types (`message.created`, or `message.*` for a family) and a team. */
export interface EventFilter {
  types?: readonly string[] | undefined;
  teamId?: string | undefined;
}

/** Whether `event` passes `filter` (the same rule the SQL of {@link readEvents} applies). */
export function matchesFilter(event: Pick<StoredEvent, 'type' | 'team_id'>, filter: EventFilter): boolean {
  if (filter.teamId !== undefined && event.team_id !== filter.teamId) return false;
  if (filter.types === undefined) return true;
  return typeMatches(event.type, filter.types);
}

/** Whether `type` is one of `patterns`, or of a family `family.*` among them. */
export function typeMatches(type: string, patterns: readonly string[]): boolean {
  const family = `${type.split('.')[0]}.*`;
  return patterns.includes(type) || patterns.includes(family);
}

/** The SQL predicate of a type filter over an `events` alias `e`, with the patterns as parameter `$n`. */
export function typeFilterSql(param: number): string {
  return `(e.type = ANY($${param}::text[]) OR split_part(e.type, '.', 1) || '.*' = ANY($${param}::text[]))`;
}

/** Where an organization's log stands: the newest seq (0 when none) and the oldest one kept. */
export interface LogBounds {
  /** The newest seq written (0 before the first event). */
  head: number;
  /** The oldest seq still kept; `head + 1` when every event has expired or there is none. */
  oldest: number;
}

/** Reads {@link LogBounds} of `orgId` (one statement, so one snapshot). */
export async function logBounds(db: Queryable, orgId: string): Promise<LogBounds> {
  const rows = await db.query<{ head: string | null; oldest: string | null }>(
    `SELECT (SELECT last_seq FROM event_counters WHERE org_id = $1) AS head,
            (SELECT min(seq) FROM events WHERE org_id = $1) AS oldest`,
    [orgId],
  );
  const head = Number(rows[0]?.head ?? 0);
  return { head, oldest: rows[0]?.oldest == null ? head + 1 : Number(rows[0].oldest) };
}

/** The newest seq of `orgId`'s log (0 before the first event). */
export async function headSeq(db: Queryable, orgId: string): Promise<number> {
  const rows = await db.query<{ last_seq: string }>(`SELECT last_seq FROM event_counters WHERE org_id = $1`, [orgId]);
  return Number(rows[0]?.last_seq ?? 0);
}

/** A page of the log: events after a seq, and where to go on from. */
export interface EventRead {
  events: StoredEvent[];
  /** The last event returned when the page is full; else the newest seq the read looked at. */
  nextAfter: number;
  /** Whether the page was cut at the limit (more may follow at once). */
  full: boolean;
}

/**
 * Reads up to `limit` events of `orgId` with seq > `after` that pass `filter`, oldest first.
 * `after` undefined starts at the oldest event kept. Errors: `events_expired` (410, with
 * `oldest_seq`) when events after `after` have been deleted by retention; `invalid_cursor` when
 * `after` is beyond the newest seq (a cursor of another log).
 */
export async function readEvents(db: Queryable, orgId: string, after: number | undefined, limit: number, filter: EventFilter = {}): Promise<EventRead> {
  const bounds = await logBounds(db, orgId);
  const from = after ?? bounds.oldest - 1;
  assertCursor(from, bounds);
  const params: unknown[] = [orgId, from, limit, bounds.head];
  let where = `e.org_id = $1 AND e.seq > $2 AND e.seq <= $4`;
  if (filter.types !== undefined) {
    params.push(filter.types);
    where += ` AND ${typeFilterSql(params.length)}`;
  }
  if (filter.teamId !== undefined) {
    params.push(filter.teamId);
    where += ` AND e.team_id = $${params.length}`;
  }
  const rows = await db.query<EventRow>(`SELECT ${eventColumns} FROM events e WHERE ${where} ORDER BY e.seq LIMIT $3`, params);
  const events = rows.map(toEvent);
  const full = events.length === limit;
  return { events, nextAfter: full ? events.at(-1)!.seq : Math.max(from, bounds.head), full };
}

/**
 * Refuses a cursor that cannot be read on: older than the oldest event kept (`events_expired`,
 * 410, naming `oldest_seq`), or beyond the newest (`invalid_cursor`).
 */
export function assertCursor(after: number, bounds: LogBounds): void {
  if (after < bounds.oldest - 1) {
    throw new ServiceError('events_expired', `events after ${after} are no longer kept; the oldest kept is ${bounds.oldest} (read from after=${bounds.oldest - 1})`, {
      extra: { oldest_seq: bounds.oldest },
    });
  }
  if (after > bounds.head) {
    throw new ServiceError('invalid_cursor', `after=${after} is beyond the newest event of this organization (${bounds.head})`);
  }
}
