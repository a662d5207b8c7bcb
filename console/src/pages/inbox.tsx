/**
 * The inbox: the threads on the person's edges, unread and awaiting-answer first, then by last
 * activity; below them, collapsed, the threads written in the person's name (a pipeline step whose
 * `from` is the person asked an agent and awaits its answer itself: `sent_on_behalf`), which wait
 * for nothing of the person and are not counted as waiting for them; kept current live (the
 * session's event stream when the server has one, else polling); and a form to open a thread on
 * one of the person's edges.
 */
import { useEffect, useState } from 'preact/hooks';
import { useLocation } from 'preact-iso';
import { api, ApiError } from '../api.ts';
import { useLiveUpdates } from '../live.ts';
import { usePageTitle, when } from '../page.ts';
import { isMine, useSession } from '../session.ts';
import type { MeEdge, MeThread } from '../types.ts';

/** Awaiting the person first, then unread, then the most recently active. */
export function inboxOrder(threads: readonly MeThread[]): MeThread[] {
  const activity = (t: MeThread) => t.last_message?.sent_at ?? t.created_at;
  const rank = (t: MeThread) => (t.awaiting_reply ? 0 : t.unread_count > 0 ? 1 : 2);
  return [...threads].sort((a, b) => rank(a) - rank(b) || (activity(a) < activity(b) ? 1 : activity(a) > activity(b) ? -1 : 0));
}

export function InboxPage() {
  usePageTitle('Inbox');
  const { me } = useSession();
  const { path, route } = useLocation();
  const [threads, setThreads] = useState<MeThread[] | undefined>();
  const [error, setError] = useState<string | undefined>();

  useEffect(() => {
    if (path !== '/inbox') route('/inbox', true);
  }, [path]);

  const refresh = async () => {
    try {
      const { threads } = await api.threads();
      setThreads(inboxOrder(threads));
      setError(undefined);
    } catch (e) {
      if (!(e instanceof ApiError && e.status === 401)) setError((e as Error).message);
    }
  };
  useLiveUpdates(refresh, { intervalMs: 5000 });

  const own = threads?.filter((t) => !t.sent_on_behalf);
  const onBehalf = threads?.filter((t) => t.sent_on_behalf) ?? [];
  const waiting = own?.filter((t) => t.awaiting_reply || t.unread_count > 0).length ?? 0;
  return (
    <>
      <div class="page-head">
        <h1 id="inbox-title" tabIndex={-1}>
          Inbox
        </h1>
        <p class="muted" role="status">
          {threads === undefined ? 'Loading threads…' : waiting === 0 ? 'Nothing waits for you.' : `${waiting} ${waiting === 1 ? 'thread waits' : 'threads wait'} for you.`}
        </p>
      </div>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <ul class="inbox" aria-labelledby="inbox-title">
        {own?.map((t) => (
          <InboxItem key={t.thread_id} thread={t} mine={(id) => isMine(me, id)} />
        ))}
      </ul>
      {threads?.length === 0 && <p>No threads yet. Open one below, or wait for an agent to write to you.</p>}
      {onBehalf.length > 0 && (
        <details class="on-behalf">
          <summary>
            Written in your name: {onBehalf.length} {onBehalf.length === 1 ? 'thread' : 'threads'}
          </summary>
          <p class="muted">A pipeline wrote these as you and awaits their answers itself: nothing here waits for you.</p>
          <ul class="inbox" aria-label="Written in your name">
            {onBehalf.map((t) => (
              <InboxItem key={t.thread_id} thread={t} mine={(id) => isMine(me, id)} />
            ))}
          </ul>
        </details>
      )}
      <NewThread onOpened={(id) => route(`/threads/${id}`)} />
    </>
  );
}

function InboxItem({ thread, mine }: { thread: MeThread; mine: (id: string) => boolean }) {
  const subject = thread.subject || '(no subject)';
  const last = thread.last_message;
  return (
    <li class={!thread.sent_on_behalf && (thread.unread_count > 0 || thread.awaiting_reply) ? 'unread' : undefined}>
      <a href={`/threads/${thread.thread_id}`}>
        <span class="subject">{subject}</span>
        <span class="with">with {thread.peer.name}</span>
        {thread.awaiting_reply && <span class="badge waiting">Awaits your answer</span>}
        {thread.unread_count > 0 && (
          <span class="badge">
            {thread.unread_count} unread<span class="visually-hidden"> {thread.unread_count === 1 ? 'message' : 'messages'}</span>
          </span>
        )}
        {last && (
          <span class="preview">
            {mine(last.sender_id) ? 'You: ' : `${thread.peer.name}: `}
            {last.content.length > 140 ? `${last.content.slice(0, 140)}…` : last.content}
            <time dateTime={last.sent_at}> · {when(last.sent_at)}</time>
          </span>
        )}
      </a>
    </li>
  );
}

/** Opening a thread on one of the person's edges: to whom, a subject, the first message. */
function NewThread({ onOpened }: { onOpened: (threadId: string) => void }) {
  const [edges, setEdges] = useState<MeEdge[] | undefined>();
  const [edgeId, setEdgeId] = useState('');
  const [subject, setSubject] = useState('');
  const [content, setContent] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>();
  useEffect(() => {
    api.edges().then(({ edges }) => {
      setEdges(edges);
      setEdgeId((current) => current || edges[0]?.edge_id || '');
    }, () => setEdges([]));
  }, []);
  if (!edges || edges.length === 0) return null;
  const submit = async (event: Event) => {
    event.preventDefault();
    if (!content.trim()) {
      setError('Write a first message.');
      return;
    }
    setBusy(true);
    setError(undefined);
    try {
      const thread = await api.openThread(edgeId, subject.trim(), content);
      onOpened(thread.thread_id);
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <section class="card" aria-labelledby="new-thread-title">
      <h2 id="new-thread-title">Open a thread</h2>
      <form onSubmit={submit}>
        <label for="new-thread-peer">With</label>
        <select id="new-thread-peer" value={edgeId} onChange={(e) => setEdgeId((e.target as HTMLSelectElement).value)}>
          {edges.map((edge) => (
            <option key={`${edge.edge_id}-${edge.human_id}`} value={edge.edge_id}>
              {edge.peer.name} ({edge.peer.kind})
            </option>
          ))}
        </select>
        <label for="new-thread-subject">Subject</label>
        <input id="new-thread-subject" value={subject} maxLength={200} onInput={(e) => setSubject((e.target as HTMLInputElement).value)} />
        <label for="new-thread-content">Message</label>
        <textarea id="new-thread-content" rows={3} value={content} onInput={(e) => setContent((e.target as HTMLTextAreaElement).value)} />
        {error && (
          <p class="error" role="alert">
            {error}
          </p>
        )}
        <button type="submit" disabled={busy}>
          Open thread
        </button>
      </form>
    </section>
  );
}
