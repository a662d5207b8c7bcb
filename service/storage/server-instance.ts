/**
 * This process as the database knows it: a row of `server_instances` whose heartbeat it refreshes,
 * so that work it claimed (an Idempotency-Key's request) can be told from work of a process that
 * died. Without it a claim of a process killed mid-request blocks every retry of that request for
 * the claim's whole timeout (five minutes): clients retrying after a `kill -9` got 409
 * `idempotency_key_in_use` all that time.
 */
import { randomUUID } from 'node:crypto';
import type { Queryable } from './db.ts';

/** How often a process refreshes its heartbeat, in milliseconds. */
export const heartbeatEveryMs = 5_000;
/** A heartbeat older than this (seconds) is a process that stopped: three missed refreshes. */
export const deadAfterSeconds = 15;

/** A registered process: its id, and `close()` to deregister at a clean stop. */
export interface ServerInstance {
  id: string;
  close(): Promise<void>;
}

/**
 * SQL predicate on a `claimed_by` column (an instance id, or null for claims made before
 * instances were recorded) that holds while the claiming process is alive.
 */
export function instanceAlive(column: string): string {
  return `(${column} IS NOT NULL AND EXISTS (SELECT 1 FROM server_instances s WHERE s.id = ${column} AND s.heartbeat_at > now() - make_interval(secs => ${deadAfterSeconds})))`;
}

/**
 * Registers this process and refreshes its heartbeat every {@link heartbeatEveryMs} (the timer does
 * not keep the process alive). `sole`: this process is known to be the only one (the embedded
 * database, whose data dir is locked), so every other instance row belongs to a process that is
 * gone and is removed at once; rows of other processes otherwise age out and are removed by
 * whoever registers next. Errors: rejects when the database fails at registration; later
 * refreshes that fail are retried on the next tick.
 */
export async function registerInstance(db: Queryable, options: { sole: boolean }): Promise<ServerInstance> {
  const id = randomUUID();
  if (options.sole) await db.query(`DELETE FROM server_instances`);
  else await db.query(`DELETE FROM server_instances WHERE heartbeat_at < now() - interval '1 hour'`);
  await db.query(`INSERT INTO server_instances (id) VALUES ($1)`, [id]);
  const timer = setInterval(() => {
    db.query(`UPDATE server_instances SET heartbeat_at = now() WHERE id = $1`, [id]).catch(() => {});
  }, heartbeatEveryMs);
  timer.unref();
  return {
    id,
    async close() {
      clearInterval(timer);
      await db.query(`DELETE FROM server_instances WHERE id = $1`, [id]).catch(() => {});
    },
  };
}
