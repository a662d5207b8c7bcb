/**
 * Drives the official MCP Inspector's CLI mode against a live acs-server, the way a user checks
 * an MCP server by hand (`scripts/mcp-inspector.sh` installs the Inspector and calls this):
 *
 *   node scripts/mcp-inspector.ts PATH/TO/inspector
 *
 * Starts an in-memory server on a free loopback port, makes a team (agent `bot`, human `ann`,
 * an edge, a thread ann opened) and an MCP key for bot, then runs `inspector --cli URL
 * --transport http --header "x-api-key: …"` for `tools/list` (with `--strict`: tool schemas
 * that other clients could not read fail the run) and a `tools/call` of each of the seven tools
 * and the four task tools (on a task ann asked of bot), plus a tool error and a refused key, checking each answer. Prints one line per check and a
 * summary; exit status 1 when a check failed. The key is never printed.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer } from '../service/index.ts';
import { AcsClient } from '../client/acs-client.ts';

const inspector = process.argv[2];
if (!inspector) {
  process.stderr.write('usage: node scripts/mcp-inspector.ts PATH/TO/inspector\n');
  process.exit(2);
}

// The Inspector keeps a catalog and OAuth storage under HOME: give it a scratch one.
const home = await mkdtemp(join(tmpdir(), 'mcp-inspector-home-'));

interface Outcome {
  code: number;
  stdout: string;
  stderr: string;
  json: any;
}

/** Runs the Inspector's CLI (asynchronously: the server answers in this very process). */
function inspect(url: string, key: string, args: string[]): Promise<Outcome> {
  return new Promise((resolve) => {
    const options = { timeout: 60_000, maxBuffer: 16 << 20, env: { ...process.env, HOME: home } };
    execFile(inspector!, ['--cli', url, '--transport', 'http', '--header', `x-api-key: ${key}`, ...args], options, (error, stdout, stderr) => {
      let json: unknown;
      try {
        json = JSON.parse(stdout);
      } catch {
        json = undefined;
      }
      const code = error ? (typeof error.code === 'number' ? error.code : 1) : 0;
      resolve({ code, stdout, stderr: stderr.replaceAll(key, '[key]'), json });
    });
  });
}

// A value that is not a string goes as JSON (`limit=10`, `parts=[{"text":"x"}]`): the Inspector parses it back.
const call = (url: string, key: string, tool: string, args: Record<string, unknown> = {}) =>
  inspect(url, key, [
    '--method',
    'tools/call',
    '--tool-name',
    tool,
    ...(Object.keys(args).length > 0 ? ['--tool-arg', ...Object.entries(args).map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)] : []),
  ]);

let failures = 0;
function check(name: string, outcome: Outcome, ok: (o: Outcome) => boolean): void {
  let passed = false;
  try {
    passed = ok(outcome);
  } catch {
    passed = false;
  }
  if (passed) {
    process.stdout.write(`mcp-inspector: pass: ${name}\n`);
  } else {
    failures += 1;
    process.stdout.write(`mcp-inspector: FAIL: ${name} (exit ${outcome.code})\n${outcome.stdout.slice(0, 1500)}\n${outcome.stderr.slice(0, 1500)}\n`);
  }
}

const server = await startServer({ inMemory: true, port: 0, rateLimit: false, tickMs: 60_000 });
try {
  const { org_id, api_key } = await server.provisionOrganization('inspector');
  const rest = new AcsClient({ baseUrl: server.url, apiKey: api_key });
  const team = await rest.createTeam(org_id, { team_name: 'inspected' });
  const bot = await rest.createAgent(team.team_id, { name: 'bot' });
  const ann = await rest.createHuman(team.team_id, { name: 'ann' });
  const edge = await rest.createEdge(team.team_id, [ann.human_id, bot.agent_id]);
  const thread = await rest.openThread(edge.edge_id, { sender_agent_id: ann.human_id, subject: 'Hello', content: 'hello bot' });
  const key = (await rest.createMcpKey(bot.agent_id)).mcp_key;
  const url = `${server.url}/api/v1/mcp`;

  const listed = await inspect(url, key, ['--method', 'tools/list', '--strict']);
  const names = ['add_artifact', 'get_task', 'list_edges', 'list_tasks', 'list_threads', 'open_thread', 'read_thread', 'send_message', 'update_task', 'wait_for_messages', 'whoami'];
  check('tools/list --strict: the seven tools and the four task tools, every schema portable (no error-severity finding)', listed, (o) => o.code === 0 && JSON.stringify(o.json.tools.map((t: any) => t.name).sort()) === JSON.stringify(names));

  const s = (o: Outcome) => o.json.structuredContent;
  check('whoami: the key\'s agent', await call(url, key, 'whoami'), (o) => o.code === 0 && s(o).agent.agent_id === bot.agent_id);
  check('list_edges: the edge to ann, a human', await call(url, key, 'list_edges'), (o) => o.code === 0 && s(o).edges[0].peer.name === 'ann' && s(o).edges[0].peer.kind === 'human');
  check('list_threads unread_only: ann\'s thread', await call(url, key, 'list_threads', { unread_only: true }), (o) => o.code === 0 && s(o).threads[0].thread_id === thread.thread_id);
  check('read_thread: ann\'s message, then nothing unread', await call(url, key, 'read_thread', { thread_id: thread.thread_id, limit: 10 }), (o) => o.code === 0 && s(o).messages[0].content === 'hello bot' && s(o).unread_count === 0);
  check('send_message: a message from bot', await call(url, key, 'send_message', { thread_id: thread.thread_id, content: 'hello ann, from the inspector' }), (o) => o.code === 0 && s(o).sender_id === bot.agent_id);
  check('open_thread: a new thread with one message', await call(url, key, 'open_thread', { edge_id: edge.edge_id, subject: 'Inspector', content: 'a new topic' }), (o) => o.code === 0 && s(o).message_count === 1);
  const appended = await rest.appendMessage(thread.thread_id, { sender_agent_id: ann.human_id, content: 'one more thing' });
  check('wait_for_messages: ann\'s new message at once', await call(url, key, 'wait_for_messages', { timeout_seconds: 0 }), (o) => o.code === 0 && s(o).messages.length === 1 && s(o).messages[0].message_id === appended.message_id);
  const waiting = call(url, key, 'wait_for_messages', { timeout_seconds: 30, thread_id: thread.thread_id });
  const later = await rest.appendMessage(thread.thread_id, { sender_agent_id: ann.human_id, content: 'and another' });
  check('wait_for_messages with a wait: the message appended while it runs', await waiting, (o) => o.code === 0 && s(o).messages.some((m: any) => m.message_id === later.message_id));
  const task = await rest.createTask(edge.edge_id, { requester_id: ann.human_id, parts: [{ text: 'Summarise the thread' }] });
  check('list_tasks: ann\'s task for bot', await call(url, key, 'list_tasks', { role: 'assignee' }), (o) => o.code === 0 && s(o).tasks[0].task_id === task.task_id);
  check('get_task: the task, submitted', await call(url, key, 'get_task', { task_id: task.task_id }), (o) => o.code === 0 && s(o).state === 'submitted');
  check('update_task: working, with a message from bot', await call(url, key, 'update_task', { task_id: task.task_id, state: 'working', message: 'on it' }), (o) => o.code === 0 && s(o).state === 'working' && s(o).status_message.sender_id === bot.agent_id);
  check('add_artifact: the artifact, last', await call(url, key, 'add_artifact', { task_id: task.task_id, parts: [{ text: 'a summary' }] }), (o) => o.code === 0 && s(o).artifacts.at(-1).parts[0].text === 'a summary');
  check('read_thread on an unknown thread: a tool error (isError) saying not_found', await call(url, key, 'read_thread', { thread_id: '6f1f3c1e-0000-4000-8000-000000000000' }), (o) => o.code !== 0 && o.json.isError === true && o.json.content[0].text.startsWith('not_found: '));
  check('an unknown key: refused', await inspect(url, `acs_mcp_${'x'.repeat(40)}`, ['--method', 'tools/list']), (o) => o.code !== 0 && !o.stdout.includes('"tools"'));
} catch (error) {
  failures += 1;
  process.stdout.write(`mcp-inspector: FAIL: setup: ${(error as Error).message}\n`);
} finally {
  await server.close();
  await rm(home, { recursive: true, force: true });
}
process.stdout.write(failures === 0 ? 'mcp-inspector: every check passed\n' : `mcp-inspector: ${failures} check(s) failed\n`);
process.exitCode = failures === 0 ? 0 : 1;
