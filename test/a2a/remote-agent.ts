/**
 * A remote A2A agent for the tests of A2A participants (contract §12), written with
 * `@a2a-js/sdk`'s own server (its request handler, in-memory task store and Express handlers) and
 * run in a process of its own, so a test can kill it (SIGKILL) and start it again.
 *
 * Usage: `node test/a2a/remote-agent.ts --port N [--nonsense] [--no-streaming]`; prints
 * `listening N` once it listens. Environment: `REMOTE_AUTH` (every request must carry it as
 * `Authorization`, else 401), `SLOW_MS` (how long a `slow` task works, default 0).
 *
 * What it does with a message, by its first word:
 * - `ask …` — a task that asks back (`input-required`: "What is your name?"); the answer completes
 *   it with the artifact `hello <answer>`.
 * - `slow …` — a task that says "starting" (status message), works `SLOW_MS`, then completes with
 *   the artifact `done: <text>`.
 * - anything else — a task that completes with the artifact `echo: <text>` and no message.
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
const slowMs = Number(process.env.SLOW_MS ?? '0');
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
const agentMessage = (id: string, taskId: string, contextId: string, text: string): Message => ({
  messageId: id,
  taskId,
  contextId,
  role: Role.ROLE_AGENT,
  parts: [part(text)],
  metadata: undefined,
  extensions: [],
  referenceTaskIds: [],
});

class Helper implements AgentExecutor {
  async execute(context: RequestContext, bus: ExecutionEventBus): Promise<void> {
    const { taskId, contextId } = context;
    const incoming = context.userMessage;
    const text = textOf(incoming);
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
    bus.publish(AgentEvent.task({ id: taskId, contextId, status: { state: TaskState.TASK_STATE_SUBMITTED, message: undefined, timestamp: new Date().toISOString() }, artifacts: [], history: [incoming], metadata: undefined }));
    if (text.startsWith('ask')) {
      bus.publish(status(TaskState.TASK_STATE_INPUT_REQUIRED, agentMessage(`${incoming.messageId}:question`, taskId, contextId, 'What is your name?')));
    } else if (text.startsWith('slow')) {
      bus.publish(status(TaskState.TASK_STATE_WORKING, agentMessage(`${incoming.messageId}:starting`, taskId, contextId, 'starting')));
      await new Promise((resolve) => setTimeout(resolve, slowMs));
      bus.publish(artifact('result', `done: ${text}`));
      bus.publish(status(TaskState.TASK_STATE_COMPLETED));
    } else {
      bus.publish(status(TaskState.TASK_STATE_WORKING));
      bus.publish(artifact('echo', `echo: ${text}`));
      bus.publish(status(TaskState.TASK_STATE_COMPLETED));
    }
    bus.finished();
  }

  async cancelTask(): Promise<void> {}
}

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
process.on('SIGTERM', () => server.close(() => process.exit(0)));
