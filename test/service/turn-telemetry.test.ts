// Contract §11: OpenTelemetry gets one span per run of a turn (`invoke_agent`) and one per tool call
// (`execute_tool`), named and attributed as the GenAI semantic conventions say.
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { afterAll, expect, it } from 'vitest';
import { startHarness, waitForThread } from './helpers.ts';

const cleanups: Array<() => Promise<unknown>> = [];
afterAll(async () => {
  for (const cleanup of cleanups.reverse()) await cleanup();
});

it('turn telemetry: a turn is an invoke_agent span and each tool call an execute_tool span inside it, with the GenAI attributes', async () => {
  const exporter = new InMemorySpanExporter();
  const tracerProvider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const h = await startHarness({ inMemory: true, tracerProvider });
  cleanups.push(() => h.server.close());
  await h.call('PUT', `/organizations/${h.orgId}/api-keys/echo`, { api_key: 'k' });
  const team = (await h.call('POST', `/api/v1/organizations/${h.orgId}/teams`, { team_name: 'traced' })).body.team_id;
  const dana = (await h.call('POST', `/api/v1/teams/${team}/humans`, { name: 'dana' })).body.human_id;
  const lead = (await h.call('POST', `/api/v1/teams/${team}/agents`, { name: 'lead', provider: 'echo', tools: { team: true } })).body.agent_id;
  const edge = (await h.call('POST', `/api/v1/teams/${team}/edges`, { participants: [dana, lead] })).body.edge_id;
  const thread = (await h.call('POST', `/api/v1/edges/${edge}/threads`, { sender_agent_id: dana, content: 'call whoami\ncall list_edges' })).body.thread_id;
  await waitForThread(h, thread, (ms) => ms.length >= 2);
  const calls = (await h.call('GET', `/api/v1/threads/${thread}/tool-calls`)).body.tool_calls as Array<{ tool_call_id: string; tool: string }>;

  const spans = exporter.getFinishedSpans();
  const agent = spans.filter((s) => s.name === 'invoke_agent lead');
  expect(agent).toHaveLength(1);
  expect(agent[0]!.attributes).toMatchObject({
    'gen_ai.operation.name': 'invoke_agent',
    'gen_ai.agent.name': 'lead',
    'gen_ai.agent.id': lead,
    'gen_ai.provider.name': 'echo',
    'gen_ai.conversation.id': thread,
  });
  const tools = spans.filter((s) => s.attributes['gen_ai.operation.name'] === 'execute_tool');
  expect(tools.map((s) => s.name).sort()).toEqual(['execute_tool list_edges', 'execute_tool whoami']);
  for (const span of tools) {
    expect(span.parentSpanId).toBe(agent[0]!.spanContext().spanId);
    expect(span.spanContext().traceId).toBe(agent[0]!.spanContext().traceId);
  }
  expect(tools.map((s) => s.attributes['gen_ai.tool.call.id']).sort()).toEqual(calls.map((c) => c.tool_call_id).sort());
});
