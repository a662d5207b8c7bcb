import type { Task } from '../../api/tasks.ts';
import type { EventHub } from '../events/hub.ts';
import type { ServiceMetrics } from '../metrics/hooks.ts';
import type { WakeOneQueues } from '../events/wake-one.ts';
import type { UrlPolicy } from '../outbound/url-guard.ts';
import type { Db } from '../storage/db.ts';
import type { SecretBox } from './secret-box.ts';

/**
 * Who is calling: the organization of the authenticated key. The key reaches that organization
 * and every organization it provisioned (contract §3).
 */
export interface Caller {
  orgId: string;
  keyId: string;
}

/**
 * What every domain operation needs: storage, the event hub (the one reader of the event log:
 * waits subscribe there, and a commit that wrote events announces it there), the queues of
 * competing waiters (an agent's `wait_for_messages`) and the secret box; and this process's id
 * among the processes of the database (storage/server-instance.ts), when registered.
 */
export interface DomainDeps {
  db: Db;
  events: EventHub;
  inboxes: WakeOneQueues;
  secrets: SecretBox;
  instanceId?: string | undefined;
  /**
   * Where the service's own requests may go (`--webhook-allow-private`, and a stand-in resolver in
   * tests): agents' remote MCP servers follow it (contract §11). Default: public https only.
   */
  urls?: UrlPolicy | undefined;
  /** The process's metrics (`--metrics-listen`, service/metrics/); absent: nothing is counted. */
  metrics?: ServiceMetrics | undefined;
  /**
   * Told, after its commit, of each task a requester canceled (contract §12; domain/tasks.ts): the
   * A2A layer asks a remote A2A assignee to cancel its own task (a2a/remote-cancel.ts). Called
   * without waiting for it and never throwing; absent (tests that build deps by hand): nobody is
   * told.
   */
  onTaskCanceled?: ((task: Task) => void) | undefined;
}

/** SQL predicate on an `organizations` alias `o` that holds when `$n` (the caller's org) reaches it. */
export function reaches(alias: string, param: number): string {
  return `(${alias}.id = $${param} OR ${alias}.provisioned_by = $${param})`;
}
