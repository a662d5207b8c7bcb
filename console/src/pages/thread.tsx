/**
 * One thread of the person's: the conversation (Markdown rendered safely), live, and the reply
 * box (a textbox named `Reply` and a `Send` button). Showing it marks it read. A thread that is
 * not the person's — another team's, or one that does not exist — shows "Not found".
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { useRoute } from 'preact-iso';
import { api, ApiError } from '../api.ts';
import { useLiveUpdates } from '../live.ts';
import { renderMarkdown } from '../markdown.ts';
import { usePageTitle, when } from '../page.ts';
import { isMine, useSession } from '../session.ts';
import type { Message, MeThreadPage } from '../types.ts';
import { NotFoundPage } from './not-found.tsx';

export function ThreadPage() {
  const { params } = useRoute();
  const id = params.id ?? '';
  const { me } = useSession();
  const [thread, setThread] = useState<MeThreadPage | undefined>();
  const [messages, setMessages] = useState<Message[]>([]);
  const [missing, setMissing] = useState(false);
  const [error, setError] = useState<string | undefined>();
  const cursor = useRef<string | undefined>(undefined);
  const marked = useRef<string | undefined>(undefined);
  usePageTitle(missing ? 'Not found' : thread ? thread.subject || '(no subject)' : 'Thread');

  useEffect(() => {
    setThread(undefined);
    setMessages([]);
    setMissing(false);
    cursor.current = undefined;
    marked.current = undefined;
  }, [id]);

  const refresh = async () => {
    if (missing) return;
    try {
      // Page through everything new since the last read.
      for (;;) {
        const page = await api.thread(id, cursor.current);
        setThread(page);
        if (page.messages.length > 0) setMessages((known) => [...known, ...page.messages.filter((m) => !known.some((k) => k.message_id === m.message_id))]);
        cursor.current = page.next_after ?? cursor.current;
        if (!page.has_more) break;
      }
      setError(undefined);
      const last = cursor.current;
      if (last && last !== marked.current) {
        marked.current = last;
        await api.markRead(id, last);
      }
    } catch (e) {
      if (e instanceof ApiError && (e.status === 404 || e.code === 'not_found')) setMissing(true);
      else if (!(e instanceof ApiError && e.status === 401)) setError((e as Error).message);
    }
  };
  useLiveUpdates(refresh, { intervalMs: 3000 }, [id]);

  if (missing) return <NotFoundPage what="thread" />;
  if (!thread) {
    return (
      <p role="status" class="muted">
        Loading the thread…
      </p>
    );
  }
  const nameOf = (senderId: string) => (isMine(me, senderId) ? 'You' : senderId === thread.peer.participant_id ? thread.peer.name : 'Someone');
  return (
    <>
      <div class="page-head">
        <h1 tabIndex={-1}>{thread.subject || '(no subject)'}</h1>
        <p class="muted">
          With {thread.peer.name} ({thread.peer.kind}) · <a href="/inbox">Back to the inbox</a>
        </p>
        {thread.awaiting_reply && <p class="badge waiting">{thread.peer.name} awaits your answer</p>}
      </div>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <ol class="messages" aria-label="Messages" aria-live="polite" aria-relevant="additions">
        {messages.map((m) => (
          <li key={m.message_id} class={isMine(me, m.sender_id) ? 'mine' : 'theirs'}>
            <p class="meta">
              <strong>{nameOf(m.sender_id)}</strong> <time dateTime={m.sent_at}>{when(m.sent_at)}</time>
            </p>
            <div class="content" dangerouslySetInnerHTML={{ __html: renderMarkdown(m.content) }} />
          </li>
        ))}
      </ol>
      <ReplyBox threadId={id} onSent={refresh} />
    </>
  );
}

function ReplyBox({ threadId, onSent }: { threadId: string; onSent: () => Promise<void> }) {
  const [content, setContent] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>();
  const send = async (event: Event) => {
    event.preventDefault();
    if (!content.trim()) {
      setError('Write something first.');
      return;
    }
    setBusy(true);
    setError(undefined);
    try {
      await api.reply(threadId, content);
      setContent('');
      await onSent();
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  };
  return (
    <form class="reply" onSubmit={send}>
      <label for="reply">Reply</label>
      <textarea
        id="reply"
        rows={3}
        value={content}
        aria-describedby="reply-hint"
        onInput={(e) => setContent((e.target as HTMLTextAreaElement).value)}
        onKeyDown={(e) => {
          if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) void send(e);
        }}
      />
      <p id="reply-hint" class="muted">
        Markdown works. Ctrl+Enter sends.
      </p>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      <button type="submit" disabled={busy}>
        Send
      </button>
    </form>
  );
}
