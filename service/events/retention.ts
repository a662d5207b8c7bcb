/**
 * Retention of the event log and the delivery log (contract §9: events are kept at least 7 days,
 * deliveries 7 days). Every process prunes now and then; a transaction-scoped advisory lock lets
 * one of them at a time do it, and each statement deletes a bounded batch, so pruning never holds
 * many row locks or one long transaction.
 */
import type { Db } from '../storage/db.ts';
import { pruneLiveItems } from './deltas.ts';

/** Contract §9's floor: 7 days, in milliseconds. */
export const defaultRetentionMs = 7 * 24 * 3600e3;

/** Rows deleted per statement. */
const batch = 10_000;

/** Deletes events and finished deliveries older than `retentionMs`. Output: how many of each went. */
export async function pruneOnce(db: Db, retentionMs: number): Promise<{ events: number; deliveries: number }> {
  const totals = { events: 0, deliveries: 0 };
  for (;;) {
    const done = await db.transaction(async (tx) => {
      const [lock] = await tx.query<{ got: boolean }>(`SELECT pg_try_advisory_xact_lock(hashtext('acs-server:event-retention')) AS got`);
      if (!lock?.got) return { events: 0, deliveries: 0 };
      const cutoff = new Date(Date.now() - retentionMs);
      const events = await tx.query(
        `DELETE FROM events WHERE n IN (SELECT n FROM events WHERE created_at < $1 AND seq IS NOT NULL LIMIT $2) RETURNING 1`,
        [cutoff, batch],
      );
      const deliveries = await tx.query(
        `DELETE FROM webhook_deliveries WHERE id IN (SELECT id FROM webhook_deliveries WHERE status <> 'pending' AND updated_at < $1 LIMIT $2) RETURNING 1`,
        [cutoff, batch],
      );
      return { events: events.length, deliveries: deliveries.length };
    });
    totals.events += done.events;
    totals.deliveries += done.deliveries;
    if (done.events < batch && done.deliveries < batch) return totals;
  }
}

/** A running pruner. */
export interface Pruner {
  close(): void;
}

/**
 * Prunes at start and then every `min(1 h, retentionMs / 4)` (at least every 250 ms for the short
 * retentions tests use); the live items of thread streams (events/deltas.ts, kept ten minutes) every
 * minute. `log` gets failures (retried at the next round).
 */
export function startPruner(db: Db, retentionMs: number, log: (message: string, error: unknown) => void = () => {}): Pruner {
  let closed = false;
  const round = () => {
    if (closed) return;
    pruneOnce(db, retentionMs).catch((error: unknown) => {
      if (!closed) log('events: pruning old events failed; retried at the next round', error);
    });
  };
  const timer = setInterval(round, Math.max(250, Math.min(3600e3, retentionMs / 4)));
  timer.unref();
  const live = setInterval(() => {
    pruneLiveItems(db).catch((error: unknown) => {
      if (!closed) log('events: pruning old live items of thread streams failed; retried at the next round', error);
    });
  }, 60_000);
  live.unref();
  round();
  return {
    close() {
      closed = true;
      clearInterval(timer);
      clearInterval(live);
    },
  };
}
