/**
 * The custom search attribute push waits need (`TeamctlAwaitingThreads`, a KeywordList; see
 * `workflows/pipeline-waits.ts`): a waiting run lists its threads in it and the events listener
 * finds the run by it. `teamctl worker` registers it in its namespace when it is missing, so a
 * server started without `--search-attribute TeamctlAwaitingThreads=KeywordList` works too.
 */
import proto from '@temporalio/proto';
import { AWAITING_THREADS_NAME } from '../workflows/pipeline-waits.ts';

/** The operator service calls this module makes (a `NativeConnection`'s or a client `Connection`'s). */
export interface OperatorCalls {
  operatorService: {
    listSearchAttributes(request: { namespace: string }): Promise<{ customAttributes?: Record<string, unknown> | null }>;
    addSearchAttributes(request: { namespace: string; searchAttributes: Record<string, number> }): Promise<unknown>;
  };
}

/** What {@link ensureAwaitingThreads} found or did. */
export type SearchAttributeOutcome = { ready: true; created: boolean } | { ready: false; reason: string };

/**
 * Makes sure the namespace has `TeamctlAwaitingThreads` (KeywordList): lists the custom search
 * attributes and adds it when missing (an attribute added by another worker meanwhile counts as
 * there). Output: whether push waits can be used, and why not (no permission to add it, as on a
 * Temporal Cloud namespace where an administrator adds it; a server that refused it). Raises
 * nothing: without it, runs wait by poll.
 */
export async function ensureAwaitingThreads(connection: OperatorCalls, namespace: string): Promise<SearchAttributeOutcome> {
  const { temporal } = proto;
  try {
    const listed = await connection.operatorService.listSearchAttributes({ namespace });
    if (listed.customAttributes && AWAITING_THREADS_NAME in listed.customAttributes) return { ready: true, created: false };
    await connection.operatorService.addSearchAttributes({
      namespace,
      searchAttributes: { [AWAITING_THREADS_NAME]: temporal.api.enums.v1.IndexedValueType.INDEXED_VALUE_TYPE_KEYWORD_LIST },
    });
    return { ready: true, created: true };
  } catch (error) {
    // Two workers starting together: the second one's add fails with "already exists".
    if (/already exists/i.test((error as Error).message)) return { ready: true, created: false };
    return { ready: false, reason: `could not register search attribute ${AWAITING_THREADS_NAME} (KeywordList): ${(error as Error).message}` };
  }
}
