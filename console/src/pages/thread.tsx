/**
 * One thread of the person's: the conversation (Markdown rendered safely), live, with the tool
 * calls of the agents' turns next to the message each turn answers or its reply (collapsed to a
 * line each, expandable for arguments and result), a reply growing as it is written with **Stop**
 * (the thread's stream, contract §13), a stopped reply marked so in words, **Approve** and
 * **Reject** when the agent asks the person for an approval, and the reply box (a textbox named
 * `Reply` and a `Send` button).
 * Showing it marks it read. A thread that is not the person's — another team's, or one that does
 * not exist — shows "Not found".
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { useRoute } from 'preact-iso';
import { allToolCalls, api, ApiError } from '../api.ts';
import { useLiveUpdates } from '../live.ts';
import { renderMarkdown } from '../markdown.ts';
import { useWritingReplies } from '../thread-stream.ts';
import { stillWriting, type WritingReply } from '../writing-replies.ts';
import { fullWhen, usePageTitle, when } from '../page.ts';
import { isMine, useSession } from '../session.ts';
import { durationText, isFinal, pendingApproval, reachText, shownValue, statusWords, toolLabel, turnsByMessage, type Turn } from '../tool-calls.ts';
import type { Me, Message, MeThreadPage, ToolCall } from '../types.ts';
import { NotFoundPage } from './not-found.tsx';

export function ThreadPage() {
  const { params } = useRoute();
  const id = params.id ?? '';
  const { me } = useSession();
  const [thread, setThread] = useState<MeThreadPage | undefined>();
  const [messages, setMessages] = useState<Message[]>([]);
  const [missing, setMissing] = useState(false);
  const [error, setError] = useState<string | undefined>();
  const [calls, setCalls] = useState<ToolCall[]>([]);
  const [names, setNames] = useState<Map<string, string>>(new Map());
  const cursor = useRef<string | undefined>(undefined);
  const marked = useRef<string | undefined>(undefined);
  const knownCalls = useRef<ToolCall[]>([]);
  usePageTitle(missing ? 'Not found' : thread ? thread.subject || '(no subject)' : 'Thread');

  useEffect(() => {
    setThread(undefined);
    setMessages([]);
    setMissing(false);
    setCalls([]);
    cursor.current = undefined;
    marked.current = undefined;
    knownCalls.current = [];
  }, [id]);

  // The names of the thread's team, for whom a tool call reached (an ask to another agent).
  const teamId = thread?.team_id;
  useEffect(() => {
    if (!teamId) return;
    let current = true;
    api.team(teamId).then(
      (team) => {
        if (current) setNames(new Map([...team.agents.map((a) => [a.agent_id, a.name] as const), ...team.humans.map((h) => [h.human_id, h.name] as const)]));
      },
      () => {},
    );
    return () => {
      current = false;
    };
  }, [teamId]);

  /** Reads the tool calls that may have changed: those from the first one not final on (the ones before it change no more). */
  const refreshCalls = async () => {
    const known = knownCalls.current;
    const open = known.findIndex((c) => !isFinal(c));
    const keep = open === -1 ? known.length : open;
    const fresh = await allToolCalls(id, keep > 0 ? known[keep - 1]!.tool_call_id : undefined);
    knownCalls.current = [...known.slice(0, keep), ...fresh];
    setCalls(knownCalls.current);
  };

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
      await refreshCalls();
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
  // The replies being written, from the thread's own stream; a message posted there (or a tool
  // call) is read at once, so the whole reply takes the place of its growing text.
  const writing = useWritingReplies(id, thread !== undefined && !missing, () => void refresh());

  if (missing) return <NotFoundPage what="thread" />;
  if (!thread) {
    return (
      <p role="status" class="muted">
        Loading the thread…
      </p>
    );
  }
  const nameOf = (senderId: string) => (isMine(me, senderId) ? 'You' : senderId === thread.peer.participant_id ? thread.peer.name : (names.get(senderId) ?? 'Someone'));
  const turns = turnsByMessage(calls, messages);
  const approval = thread.peer.kind === 'agent' ? pendingApproval(messages, thread.peer.participant_id) : undefined;
  const growing = stillWriting(writing, new Set(messages.map((m) => m.message_id)));
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
              <strong>{nameOf(m.sender_id)}</strong> <time dateTime={m.sent_at} title={fullWhen(m.sent_at)}>
                {when(m.sent_at)}
              </time>
            </p>
            <div class="content" dangerouslySetInnerHTML={{ __html: renderMarkdown(m.content) }} />
            {m.stopped && (
              <p class="stopped-mark">
                <span aria-hidden="true">■ </span>Stopped while it was being written
              </p>
            )}
            {(turns.get(m.message_id) ?? []).map((turn) => (
              <TurnCalls key={turn.turnId} turn={turn} me={me} nameOf={nameOf} />
            ))}
          </li>
        ))}
      </ol>
      {growing.length > 0 && <WritingBox threadId={id} replies={growing} nameOf={(senderId) => nameOf(senderId ?? thread.peer.participant_id)} />}
      {approval && <ApprovalBox threadId={id} agent={thread.peer.name} tool={approval.tool} onSent={refresh} />}
      <ReplyBox threadId={id} onSent={refresh} />
    </>
  );
}

/**
 * The tool calls of one agent's turn: a line each (tool, whom it reached, status in words and a
 * sign, duration) that opens (`<details>`) on its arguments and its result or error. A call that
 * waits on the person (an ask to them, an approval by them) links to the question.
 */
function TurnCalls({ turn, me, nameOf }: { turn: Turn; me: Me; nameOf: (id: string) => string }) {
  const agent = nameOf(turn.agentId);
  const count = `${turn.calls.length} tool call${turn.calls.length === 1 ? '' : 's'}`;
  return (
    <section class="tool-calls" aria-label={`Tool calls of ${agent}'s turn`}>
      <p class="head">
        {agent}'s turn{turn.reply ? '' : ' (no reply yet)'}: {count}
      </p>
      <ul>
        {turn.calls.map((call) => {
          const reach = reachText(call, nameOf);
          const status = statusWords(call);
          const took = durationText(call);
          const waitsOnMe = !isFinal(call) && call.waiting_on !== null && isMine(me, call.waiting_on.participant_id);
          return (
            <li key={call.tool_call_id}>
              <details>
                <summary>
                  <code class="tool">{toolLabel(call)}</code>
                  {reach && <span class="reach"> · {reach}</span>}
                  <span class={`status status-${call.status}`}>
                    {' · '}
                    <span aria-hidden="true">{status.sign}</span> {status.text}
                  </span>
                  <span class="duration"> · {took ?? `since ${when(call.started_at)}`}</span>
                </summary>
                <dl>
                  <dt>Arguments</dt>
                  <dd>
                    <pre tabIndex={0}>{shownValue(call.arguments)}</pre>
                  </dd>
                  {call.error ? (
                    <>
                      <dt>Error</dt>
                      <dd>{call.error}</dd>
                    </>
                  ) : isFinal(call) ? (
                    <>
                      <dt>Result</dt>
                      <dd>
                        <pre tabIndex={0}>{shownValue(call.result)}</pre>
                      </dd>
                    </>
                  ) : (
                    <>
                      <dt>Result</dt>
                      <dd class="muted">None yet: the call is {status.text}.</dd>
                    </>
                  )}
                </dl>
              </details>
              {waitsOnMe && call.waiting_on && (
                <p class="action">
                  <a href={`/threads/${call.waiting_on.thread_id}`}>{call.status === 'awaiting_approval' ? `Answer ${agent}'s approval question` : `Answer ${agent}'s question`}</a>
                </p>
              )}
            </li>
          );
        })}
      </ul>
    </section>
  );
}

/**
 * The replies being written in the thread, growing as their deltas come (Markdown rendered as the
 * messages are), each marked `aria-busy` while it grows and kept out of every live region: a screen
 * reader is not told each piece, but the whole reply once, when it joins the messages (a polite
 * live region). **Stop** (while one is being written) asks the service to end it: what was
 * written so far is posted as the reply, marked stopped.
 */
function WritingBox({ threadId, replies, nameOf }: { threadId: string; replies: WritingReply[]; nameOf: (senderId: string | undefined) => string }) {
  const [stopping, setStopping] = useState(false);
  const [error, setError] = useState<string | undefined>();
  const running = replies.some((r) => !r.done);
  useEffect(() => {
    if (!running) setStopping(false);
  }, [running]);
  const stop = async () => {
    setStopping(true);
    setError(undefined);
    try {
      await api.stop(threadId);
    } catch (e) {
      setStopping(false);
      setError((e as Error).message);
    }
  };
  return (
    <section class="writing" aria-label="Replies being written">
      {replies.map((reply) => (
        <div key={reply.messageId} class="reply-writing" aria-busy={reply.done ? 'false' : 'true'}>
          <p class="meta">
            <strong>{nameOf(reply.senderId)}</strong> <span>{reply.done ? 'has written:' : 'is writing…'}</span>
          </p>
          {reply.text === '' ? (
            <p class="muted">{reply.done ? '' : 'Working on it (tool calls, or the first words).'}</p>
          ) : (
            <div class="content" dangerouslySetInnerHTML={{ __html: renderMarkdown(reply.text) }} />
          )}
        </div>
      ))}
      {running && (
        <button type="button" class="danger" disabled={stopping} onClick={() => void stop()} aria-describedby="stop-hint">
          {stopping ? 'Stopping…' : 'Stop'}
        </button>
      )}
      {running && (
        <p id="stop-hint" class="muted">
          Stop ends the reply here: what was written so far is posted, marked stopped.
        </p>
      )}
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </section>
  );
}

/**
 * What the person answers an approval with: **Approve** posts `approve`, **Reject** posts
 * `reject` or `reject: REASON` with the optional reason — the words the service reads as the
 * typed reply `{decision, comment?}` (service/tools/approval.ts) — through the reply route.
 */
function ApprovalBox({ threadId, agent, tool, onSent }: { threadId: string; agent: string; tool: string | undefined; onSent: () => Promise<void> }) {
  const [reason, setReason] = useState('');
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | undefined>();
  const answer = async (content: string) => {
    setBusy(true);
    setError(undefined);
    try {
      await api.reply(threadId, content);
      setReason('');
      await onSent();
    } catch (e) {
      setError((e as Error).message);
    } finally {
      setBusy(false);
    }
  };
  const trimmed = reason.trim();
  return (
    <section class="approval" aria-labelledby="approval-title">
      <h2 id="approval-title">{agent} asks for your approval</h2>
      <p>
        {tool ? (
          <>
            To call <code>{tool}</code> with the arguments in its message above.
          </>
        ) : (
          'As its message above says.'
        )}{' '}
        Approving lets the call run; rejecting tells {agent} no, with your reason if you give one. You can also answer in words below.
      </p>
      <button type="button" disabled={busy} onClick={() => void answer('approve')}>
        Approve
      </button>
      <label for="reject-reason">Reason for rejecting (optional)</label>
      <input id="reject-reason" type="text" maxLength={4000} value={reason} onInput={(e) => setReason((e.target as HTMLInputElement).value)} />
      <button type="button" class="danger" disabled={busy} onClick={() => void answer(trimmed ? `reject: ${trimmed}` : 'reject')}>
        Reject
      </button>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
    </section>
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
