/**
 * A remote A2A agent for the tests of A2A participants (contract §12), written with
 * `@a2a-js/sdk`'s own server (its request handler, in-memory task store and Express handlers) and
 * run in a process of its own, so a test can kill it (SIGKILL) and start it again.
 *
 * Usage: `node test/a2a/remote-agent.ts --port N [--nonsense] [--no-streaming] [--chatty]`;
 * prints `listening N` once it listens. Environment: `REMOTE_AUTH` (every request must carry it as
 * `Authorization`, else 401; its files too), `SLOW_MS` (how long a `slow` task works, default 0).
 *
 * What it does with a message, by its first word:
 * - `ask …` — a task that asks back (`input-required`: "What is your name?"); the answer completes
 *   it with the artifact `hello <answer>`.
 * - `slow …` — a task that says "starting" (status message), works `SLOW_MS`, then completes with
 *   the artifact `done: <text>`.
 * - `stream …` — a task that writes the artifact `story` in chunks (`append`), one word of
 *   `Once upon a time, <text>.` each `STREAM_MS` (default 30) apart, then completes with no
 *   message (the artifact's text is the reply), or, asked `stream and say …`, with the message
 *   "The tale is told."; the same chunks under the same ids when asked again. With `STREAM_HOLD_MS`, it works that long after its third chunk (a test kills it then).
 * - `file …` — a task that completes with the artifact `report` (a text part, the bytes of
 *   `report.txt`, and by URL `notes.md` and `big.bin`, served at `/files/…`: the latter 6 MiB, more
 *   than an attachment may hold) and the message "Here is the report." with the bytes of
 *   `summary.txt`.
 * - `held …` — a task that completes with the artifact `held`: a text part and three files by URL
 *   (`/held/1.bin` …) whose responses are held and never sent (a file server that never answers).
 * - anything else — a task that completes with the artifact `echo: <text>` and no message.
 * `--chatty`: every task first says `working on: <text>` (a `working` status message).
 * `CancelTask` ends a `slow` task `canceled` at once. `GET /calls` answers the agent's own record:
 * `{calls: [{method, task_id, message_id}], tasks: [{task_id, message_id}], files: [{message_id,
 * files: [{name, media_type, text}]}]}` — every JSON-RPC call it got, in order (the task a call
 * names, the message it sends), every task it made, with the message that asked for it, and the
 * files (bytes) each message carried, as UTF-8 text.
 * Message and artifact ids derive from the message asked with, so an agent started again says the
 * same things under the same ids. `--nonsense`: its card is fine (no streaming), but JSON-RPC answers `this is
 * not json`.
 */
import express from 'express';
import { AgentEvent, type AgentExecutor, DefaultRequestHandler, InMemoryTaskStore, type ExecutionEventBus, type RequestContext } from '@a2a-js/sdk/server';
import { agentCardHandler, jsonRpcHandler, UserBuilder } from '@a2a-js/sdk/server/express';
import { Role, TaskState, type AgentCard, type Message } from '@a2a-js/sdk';

const args = process.argv.slice(2);
const port = Number(args[args.indexOf('--port') + 1]);
const nonsense = args.includes('--nonsense');
const streaming = !args.includes('--no-streaming') && !nonsense;
const chatty = args.includes('--chatty');
const slowMs = Number(process.env.SLOW_MS ?? '0');
const streamMs = Number(process.env.STREAM_MS ?? '30');
const streamHoldMs = Number(process.env.STREAM_HOLD_MS ?? '0');
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const auth = process.env.REMOTE_AUTH;

const card: AgentCard = {
  name: 'Remote Helper',
  description: 'A helper agent of another framework, reached over A2A.',
  supportedInterfaces: [{ url: `http://127.0.0.1:${port}/`, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: '1.0' }],
  provider: undefined,
  version: '1.0.0',
  capabilities: { streaming, pushNotifications: false, extensions: [] },
  securitySchemes: {},
  securityRequirements: [],
  defaultInputModes: ['text/plain'],
  defaultOutputModes: ['text/plain'],
  skills: [
    { id: 'echo', name: 'Echo', description: 'Says back what it is told', tags: ['echo'], examples: [], inputModes: [], outputModes: [], securityRequirements: [] },
    { id: 'greet', name: 'Greet', description: 'Asks your name and greets you', tags: ['greet'], examples: [], inputModes: [], outputModes: [], securityRequirements: [] },
  ],
  signatures: [],
};

const textOf = (message: Message) => message.parts.map((p) => (p.content?.$case === 'text' ? p.content.value : '')).join('');
const part = (text: string) => ({ content: { $case: 'text' as const, value: text }, mediaType: 'text/plain', filename: '', metadata: undefined });
/** A file part: its bytes (`raw`), or where to fetch them (`url`). */
const filePart = (name: string, mediaType: string, content: { $case: 'raw'; value: Buffer } | { $case: 'url'; value: string }) => ({ content, mediaType, filename: name, metadata: undefined });
/** What `/files/{name}` serves (`big.bin`: 6 MiB, over the 5 MiB of an attachment). */
const files: Record<string, { type: string; data: Buffer }> = {
  'notes.md': { type: 'text/markdown', data: Buffer.from('# Notes\n\nFetched by URL.\n') },
  'big.bin': { type: 'application/octet-stream', data: Buffer.alloc(6 * 1024 * 1024, 7) },
};
const agentMessage = (id: string, taskId: string, contextId: string, text: string, more: Message['parts'] = []): Message => ({
  messageId: id,
  taskId,
  contextId,
  role: Role.ROLE_AGENT,
  parts: [part(text), ...more],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});

class Helper implements AgentExecutor {
  async execute(context: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const { taskId, contextId } = context;
    const incoming = context.userMessage;
    const text = textOf(incoming);
    const received = incoming.parts.flatMap((p) => (p.content?.$case === 'raw' ? [{ name: p.filename, media_type: p.mediaType, text: Buffer.from(p.content.value).toString('utf8') }] : []));
    if (received.length > 0) filesReceived.push({ message_id: incoming.messageId, files: received });
    const status = (state: TaskState, message?: Message) => AgentEvent.statusUpdate({ taskId, contextId, status: { state, message, timestamp: new Date().toISOString() }, metadata: undefined });
    const artifact = (id: string, value: string) =>
      AgentEvent.artifactUpdate({ taskId, contextId, artifact: { artifactId: id, name: id, description: '', parts: [part(value)], metadata: undefined, extensions: [] }, append: false, lastChunk: true, metadata: undefined });
    if (context.task) {
      // The answer to the question: the task goes on and completes.
      bus.publish(AgentEvent.task(context.task));
      bus.publish(artifact('greeting', `hello ${text}`));
      bus.publish(status(TaskState.TASK_STATE_COMPLETED, agentMessage(`${incoming.messageId}:greeted`, taskId, contextId, `hello ${text}`)));
      bus.finished();
      return;
    }
    made.push({ task_id: taskId, message_id: incoming.messageId });
    bus.publish(AgentEvent.task({ id: taskId, contextId, status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() }, artifacts: [], history: [incoming], metadata: undefined }));
    if (chatty) bus.publish(status(TaskState.TASK_STATE_WORKING, agentMessage(`${incoming.messageId}:working`, taskId, contextId, `working on: ${text}`)));
    if (text.startsWith('stream')) {
      bus.publish(status(TaskState.TASK_STATE_WORKING));
      const words = `Once upon a time, ${text}.`.split(/(?=\s)/);
      for (const [i, word] of words.entries()) {
        const chunk = { artifactId: 'story', name: 'story', description: '', parts: [part(word)], metadata: undefined, extensions: [] };
        bus.publish(AgentEvent.artifactUpdate({ taskId, contextId, artifact: chunk, append: i > 0, lastChunk: i === words.length - 1, metadata: undefined }));
        await sleep(i === 2 && streamHoldMs > 0 ? streamHoldMs : streamMs);
      }
      const closing = text.startsWith('stream and say') ? agentMessage(`${incoming.messageId}:told`, taskId, contextId, 'The tale is told.') : undefined;
      bus.publish(status(TaskState.TASK_STATE_COMPLETED, closing));
    } else if (text.startsWith('file')) {
      const base = `http://127.0.0.1:${port}/files`;
      const parts = [
        part(`report on ${text}`),
        filePart('report.txt', 'text/plain', { $case: 'raw', value: Buffer.from(`contents of the report on ${text}`) }),
        filePart('notes.md', 'text/markdown', { $case: 'url', value: `${base}/notes.md` }),
        filePart('big.bin', 'application/octet-stream', { $case: 'url', value: `${base}/big.bin` }),
      ];
      bus.publish(AgentEvent.artifactUpdate({ taskId, contextId, artifact: { artifactId: 'report', name: 'report', description: '', parts, metadata: undefined, extensions: [] }, append: false, lastChunk: true, metadata: undefined }));
      const summary = filePart('summary.txt', 'text/plain', { $case: 'raw', value: Buffer.from('one line of summary') });
      bus.publish(status(TaskState.TASK_STATE_COMPLETED, agentMessage(`${incoming.messageId}:report`, taskId, contextId, 'Here is the report.', [summary])));
    } else if (text.startsWith('held')) {
      const parts = [part(`held files for ${text}`), ...[1, 2, 3].map((n) => filePart(`${n}.bin`, 'application/octet-stream', { $case: 'url', value: `http://127.0.0.1:${port}/held/${n}.bin` }))];
      bus.publish(AgentEvent.artifactUpdate({ taskId, contextId, artifact: { artifactId: 'held', name: 'held', description: '', parts, metadata: undefined, extensions: [] }, append: false, lastChunk: true, metadata: undefined }));
      bus.publish(status(TaskState.TASK_STATE_COMPLETED));
    } else if (text.startsWith('ask')) {
      bus.publish(status(TaskState.TASK_STATE_INPUT_REQUIRED, agentMessage(`${incoming.messageId}:question`, taskId, contextId, 'What is your name?')));
    } else if (text.startsWith('slow')) {
      bus.publish(status(TaskState.TASK_STATE_WORKING, agentMessage(`${incoming.messageId}:starting`, taskId, contextId, 'starting')));
      // Works SLOW_MS, unless CancelTask ends it first (cancelTask says so and finishes the task).
      const canceled = await new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), slowMs);
        working.set(taskId, { contextId, cancel: () => (clearTimeout(timer), resolve(true)) });
      });
      working.delete(taskId);
      if (canceled) return;
      bus.publish(artifact('result', `done: ${text}`));
      bus.publish(status(TaskState.TASK_STATE_COMPLETED));
    } else {
      bus.publish(status(TaskState.TASK_STATE_WORKING));
      bus.publish(artifact('echo', `echo: ${text}`));
      bus.publish(status(TaskState.TASK_STATE_COMPLETED));
    }
    bus.finished();
  }

  /** CancelTask of a task still working (a `slow` one): it ends `canceled`. Others are the SDK's to refuse or cancel. */
  async cancelTask(taskId: string, bus: ExecutionEventBus): Promise<void> {
    const task = working.get(taskId);
    if (!task) return;
    bus.publish(AgentEvent.statusUpdate({ taskId, contextId: task.contextId, status: { state: TaskState.TASK_STATE_CANCELED, message: undefined, timestamp: new Date().toISOString() }, metadata: undefined }));
    bus.finished();
    task.cancel();
  }
}

/** The `slow` tasks working now: their context, and what ends their work when they are canceled. */
const working = new Map<string, { contextId: string; cancel: () => void }>();
/** Every JSON-RPC call received, in order: its method, the task it names and the message it sends (`GET /calls` answers them). */
const calls: Array<{ method: string; task_id: string | null; message_id: string | null }> = [];
/** Every task made, with the message that asked for it (`GET /calls`). */
const made: Array<{ task_id: string; message_id: string }> = [];
/** The files (bytes, `raw`) of each message received, by message (`GET /calls`). */
const filesReceived: Array<{ message_id: string; files: Array<{ name: string; media_type: string; text: string }> }> = [];

const handler = new DefaultRequestHandler(card, new InMemoryTaskStore(), new Helper());
const app = express();
app.use((req, res, next) => {
  if (auth !== undefined && req.headers.authorization !== auth) {
    res.status(401).json({ error: 'unauthenticated' });
    return;
  }
  next();
});
app.use('/.well-known/agent-card.json', agentCardHandler({ agentCardProvider: handler }));
// The agent's own record of the calls it got, for tests to assert on (`GET /calls`).
app.post('/', express.json(), (req, _res, next) => {
  const params = (req.body?.params ?? {}) as { id?: string; message?: { taskId?: string; messageId?: string } };
  if (typeof req.body?.method === 'string') calls.push({ method: req.body.method, task_id: params.id || params.message?.taskId || null, message_id: params.message?.messageId || null });
  next();
});
app.get('/calls', (_req, res) => {
  res.json({ calls, tasks: made, files: filesReceived });
});
app.get('/files/:name', (req, res) => {
  const file = files[req.params.name];
  if (!file) {
    res.status(404).end();
    return;
  }
  res.type(file.type).send(file.data);
});
// A file server that never answers: the response is held until the process ends.
app.get('/held/:name', (_req, res) => {
  res.flushHeaders();
});
if (nonsense) {
  app.post('/', (_req, res) => {
    res.status(200).type('application/json').send('this is not json');
  });
} else {
  app.use('/', jsonRpcHandler({ requestHandler: handler, userBuilder: UserBuilder.noAuthentication }));
}
const server = app.listen(port, '127.0.0.1', () => {
  process.stdout.write(`listening ${port}\n`);
});
process.on('SIGTERM', () => {
  server.closeAllConnections();
  server.close(() => process.exit(0));
});
