/**
 * Property-based bad input against every route of the API contract (§5; see docs/development.md,
 * "Conformance suites"), written from the contract alone. For each route, fast-check generates requests from a
 * valid one (bodies built from the contract) and mutates every part: bodies (wrong types, extra
 * fields, huge strings, unicode, nulls, deep nesting, not JSON, over 1 MiB), path ids (non-UUIDs,
 * other UUIDs, ids of other kinds, traversal, percent-encoding), query strings, and headers
 * (Content-Type variants, X-API-Key garbage, odd and large headers within Node's limits).
 *
 * Properties of every response: never a 5xx; every error is problem+json with a `code` of §2's
 * table and that code's status; no body shows a stack trace or source path, an API key, an MCP
 * key or a provider key that was set; and a rejected request (4xx) writes nothing: the
 * organizations' state as the API shows it (organizations, teams and their graphs, provider
 * keys, organization keys, MCP keys, every thread page) is identical before and after.
 *
 * Runs: ACS_FUZZ_RUNS per route (default 30); ACS_FUZZ_SEED fixes the seed (default random);
 * fast-check prints the seed and the shrunk counterexample on failure.
 */
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MCP_ENDPOINT_BUILT, fingerprint, leaksInternals } from './contract.ts';
import { call, ERROR_CODES, rawCall, startServer, uniqueName, type RawReply, type Server } from './server.ts';

const RUNS = Number(process.env.ACS_FUZZ_RUNS ?? 30);
const SEED = process.env.ACS_FUZZ_SEED === undefined ? undefined : Number(process.env.ACS_FUZZ_SEED);
const PROVIDERS = ['openai', 'anthropic', 'google', 'mistral', 'groq', 'openrouter', 'echo'] as const;

let s: Server;
/** Organization keys of the dev organization, used in turn so that no single key's budget matters. */
const pool: string[] = [];
let poolIndex = 0;
const nextKey = (): string => pool[poolIndex++ % pool.length]!;
/** Every secret that must never appear in a response body. */
const secrets = new Set<string>();
const stats: Record<string, Record<number, number>> = {};

/** The resources the fuzzed requests aim at, in the organization `orgId` (provisioned by the dev key). */
interface World {
  devOrgId: string;
  orgId: string;
  teamId: string;
  a1: string;
  a2: string;
  h1: string;
  e1: string;
  threadId: string;
  messageId: string;
  attachmentId: string;
  anchorKeyId: string;
  keyId: string;
  mcpKeyId: string;
  mcpKey: string;
  revokedKey: string;
}
let w: World;
let baseline = '';

async function req(method: string, path: string, body?: unknown): Promise<any> {
  const reply = await call(s.baseUrl, method, `/api/v1${path}`, { key: nextKey(), body });
  if (reply.status >= 300) throw new Error(`fixture ${method} ${path}: ${reply.status} ${reply.text.slice(0, 300)}`);
  return reply.body;
}

async function buildGraph(): Promise<void> {
  const team = await req('POST', `/organizations/${w.orgId}/teams`, { team_name: uniqueName('fuzz-team') });
  const a1 = await req('POST', `/teams/${team.team_id}/agents`, { name: 'alpha' });
  const a2 = await req('POST', `/teams/${team.team_id}/agents`, { name: 'beta' });
  const h1 = await req('POST', `/teams/${team.team_id}/humans`, { name: 'hana', email: 'hana@example.com' });
  const e1 = await req('POST', `/teams/${team.team_id}/edges`, { participants: [a1.agent_id, h1.human_id] });
  await req('POST', `/teams/${team.team_id}/edges`, { participants: [a1.agent_id, a2.agent_id] });
  const thread = await req('POST', `/edges/${e1.edge_id}/threads`, { sender_agent_id: a1.agent_id, subject: 'fuzz', content: 'first' });
  const message = await req('POST', `/threads/${thread.thread_id}/messages`, { sender_agent_id: h1.human_id, content: 'second' });
  Object.assign(w, { teamId: team.team_id, a1: a1.agent_id, a2: a2.agent_id, h1: h1.human_id, e1: e1.edge_id, threadId: thread.thread_id, messageId: message.message_id });
}

const ok = async (path: string): Promise<boolean> => (await call(s.baseUrl, 'GET', `/api/v1${path}`, { key: nextKey() })).status === 200;
const isActive = (k: any): boolean => k.expires_at === null || Date.parse(k.expires_at) > Date.now();

/**
 * Puts back whatever an accepted fuzzed request removed or added that the later runs rely on:
 * the graph, the attachment, the MCP key, a revocable organization key, the fixture provider
 * key; removes keys of providers that really run (so the agent loop never writes on its own).
 */
async function ensureWorld(): Promise<void> {
  // A fuzzed DELETE of the organization with a key of the one that provisioned it is accepted.
  if (!(await ok(`/organizations/${w.orgId}`))) await buildOrganization();
  const graphOk =
    (await ok(`/teams/${w.teamId}`)) && (await ok(`/agents/${w.a1}`)) && (await ok(`/agents/${w.a2}`)) && (await ok(`/humans/${w.h1}`)) && (await ok(`/edges/${w.e1}`)) && (await ok(`/threads/${w.threadId}?limit=1`));
  // Accepted requests pile up threads on the world's edge; a fresh graph keeps fingerprints small.
  const threads = graphOk ? ((await req('GET', `/edges/${w.e1}/threads`)).threads as unknown[]) : [];
  if (!graphOk || threads.length > 4) await buildGraph();
  for (const orgId of [w.devOrgId, w.orgId]) {
    for (const t of (await req('GET', `/organizations/${orgId}/teams`)).teams as any[]) if (t.team_id !== w.teamId) await req('DELETE', `/teams/${t.team_id}`);
  }
  if (!(await ok(`/attachments/${w.attachmentId}`))) {
    w.attachmentId = (await req('POST', '/attachments', { filename: 'f.txt', content_type: 'text/plain', data_base64: Buffer.from('fuzz').toString('base64') })).attachment_id;
  }
  const mcpKeys = (await req('GET', `/agents/${w.a1}/mcp-keys`)).mcp_keys as any[];
  if (!mcpKeys.some((k) => k.key_id === w.mcpKeyId)) {
    const k = await req('POST', `/agents/${w.a1}/mcp-keys`);
    Object.assign(w, { mcpKeyId: k.key_id, mcpKey: k.mcp_key });
    secrets.add(k.mcp_key);
  }
  const active = ((await req('GET', `/organizations/${w.orgId}/keys`)).keys as any[]).filter(isActive);
  for (const k of active) {
    if (k.key_id !== w.anchorKeyId && k.key_id !== w.keyId) await req('DELETE', `/organizations/${w.orgId}/keys/${k.key_id}`);
  }
  if (!active.some((k) => k.key_id === w.keyId && k.expires_at === null)) {
    const k = await req('POST', `/organizations/${w.orgId}/keys`, { name: 'sacrificial' });
    secrets.add(k.api_key);
    w.keyId = k.key_id;
  }
  const providerKeys = (await req('GET', `/organizations/${w.orgId}/api-keys`)).provider_keys as any[];
  for (const p of providerKeys) if (['echo', 'openai', 'anthropic'].includes(p.provider)) await req('DELETE', `/organizations/${w.orgId}/api-keys/${p.provider}`);
  if (!providerKeys.some((p) => p.provider === 'mistral')) await setProviderKey('mistral', `mistral-${crypto.randomUUID()}`);
}

/** The organization the runs aim at (provisioned by the dev organization), with its graph, anchor key and provider keys. */
async function buildOrganization(): Promise<void> {
  w.orgId = (await req('POST', '/organizations', { org_name: uniqueName('fuzz-org') })).org_id;
  await buildGraph();
  const anchor = await req('POST', `/organizations/${w.orgId}/keys`, { name: 'anchor' });
  secrets.add(anchor.api_key);
  w.anchorKeyId = anchor.key_id;
  w.keyId = '';
  w.mcpKeyId = '';
  await setProviderKey('mistral', `mistral-${crypto.randomUUID()}`);
  await setProviderKey('google', `google-${crypto.randomUUID()}`);
}

async function setProviderKey(provider: string, value: string): Promise<void> {
  secrets.add(value);
  await req('PUT', `/organizations/${w.orgId}/api-keys/${provider}`, { api_key: value });
}

const snapshot = (): Promise<string> => fingerprint(s.baseUrl, nextKey, [w.devOrgId, w.orgId]);

beforeAll(async () => {
  // A fuzzed route family sends thousands of requests a minute; the operator knob lifts the limit
  // (the limit itself is checked in routes.test.ts with the default).
  // The agent loop runs echo only here (ACS_AGENT_PROVIDERS), so a fuzzed agent of another
  // provider never calls out to its vendor.
  s = await startServer({ env: { ACS_RATE_LIMIT: '1000000', ACS_AGENT_PROVIDERS: 'echo' } });
  pool.push(s.apiKey);
  secrets.add(s.apiKey);
  for (let i = 0; i < 3; i++) {
    const k = await call(s.baseUrl, 'POST', `/api/v1/organizations/${s.orgId}/keys`, { key: s.apiKey, body: { name: `pool-${i}` } });
    if (k.status === 201) {
      pool.push(k.body.api_key);
      secrets.add(k.body.api_key);
    }
  }
  w = { devOrgId: s.orgId } as World;
  const revoked = await req('POST', `/organizations/${s.orgId}/keys`, { name: 'revoked' });
  await req('DELETE', `/organizations/${s.orgId}/keys/${revoked.key_id}`);
  w.revokedKey = revoked.api_key;
  secrets.add(revoked.api_key);
  w.attachmentId = '00000000-0000-4000-8000-000000000000';
  await buildOrganization();
  await ensureWorld();
  baseline = await snapshot();
}, 120_000);

afterAll(async () => {
  if (process.env.ACS_FUZZ_STATS) console.info(JSON.stringify(stats, null, 1));
  await s?.stop();
});

// ---------------------------------------------------------------------------------------------
// Generators

type Placeholder = 'org' | 'team' | 'agent' | 'human' | 'edge' | 'thread' | 'attachment' | 'orgkey' | 'mcpkey' | 'provider';

/** A path id as generated: resolved against the world only when the request is sent. */
type IdSel = { kind: 'real' } | { kind: 'realVariant'; variant: number } | { kind: 'other'; index: number } | { kind: 'raw'; value: string };
type KeySel = { kind: 'pool' } | { kind: 'none' } | { kind: 'mcp' } | { kind: 'revoked' } | { kind: 'raw'; value: string };
type BodySel = { kind: 'none' } | { kind: 'json'; value: unknown } | { kind: 'text'; value: string } | { kind: 'big' } | { kind: 'deep'; depth: number; array: boolean };

interface Fuzzed {
  method: string;
  prefix: string;
  ids: IdSel[];
  query: Array<[string, unknown]>;
  key: KeySel;
  keyHeader: string;
  contentType: string | null;
  headers: Record<string, string>;
  body: BodySel;
}

const safeEncode = (x: string): string => {
  try {
    return encodeURIComponent(x);
  } catch {
    return '%ED%A0%80'; // a lone surrogate, as UTF-8 bytes
  }
};
const printable = (max: number) => fc.string({ unit: 'grapheme-ascii', maxLength: max }).map((x) => x.replace(/[^\x20-\x7e]/g, ''));

/** Strings that have hurt services before: NUL, lone surrogates, combining marks, RTL overrides, emoji. */
const nastyString = fc.oneof(
  fc.constantFrom('\u0000', 'a\u0000b', '\ud800', '\udfff', 'e\u0301\u0301\u0301', '\u202eevil', '🙂🙃'.repeat(50), '\ufeff', ' ', '\n\t', "'; DROP TABLE teams; --", '${7*7}', '<script>x</script>', '%s%n', '../../etc/passwd', 'null', 'true', '0'),
  fc.string({ unit: 'binary', maxLength: 60 }),
  fc.string({ unit: 'grapheme', maxLength: 60 }),
);

const junkSegment = fc.oneof(
  fc.constantFrom(
    '..',
    '.',
    '%2e%2e',
    '..%2F..%2Fhealthz',
    '%2F',
    '%00',
    '%ZZ',
    '%',
    '%u0041',
    'null',
    'undefined',
    '0',
    '-1',
    '1e3',
    'NaN',
    '00000000-0000-0000-0000-000000000000',
    'ffffffff-ffff-ffff-ffff-ffffffffffff',
    '%20',
    '+',
    'a'.repeat(300),
    '{team_id}',
    ':team_id',
    '*',
    '',
    '%E2%80%AE',
    '%F0%9F%99%82',
  ),
  fc.string({ maxLength: 40 }).map(safeEncode),
  nastyString.map(safeEncode),
  fc.uuid(),
  fc.uuid().map((u) => u.toUpperCase()),
);

const idSel: fc.Arbitrary<IdSel> = fc.oneof(
  { weight: 8, arbitrary: fc.constant({ kind: 'real' } as IdSel) },
  { weight: 1, arbitrary: fc.nat(5).map((variant) => ({ kind: 'realVariant', variant }) as IdSel) },
  { weight: 2, arbitrary: fc.nat(20).map((index) => ({ kind: 'other', index }) as IdSel) },
  { weight: 3, arbitrary: junkSegment.map((value) => ({ kind: 'raw', value }) as IdSel) },
);

const providerSel: fc.Arbitrary<IdSel> = fc.oneof(
  { weight: 6, arbitrary: fc.constantFrom(...PROVIDERS).map((value) => ({ kind: 'raw', value }) as IdSel) },
  { weight: 1, arbitrary: fc.constantFrom('OpenAI', 'ECHO', 'openai ', 'azure', 'llama').map((value) => ({ kind: 'raw', value: safeEncode(value) }) as IdSel) },
  { weight: 2, arbitrary: junkSegment.map((value) => ({ kind: 'raw', value }) as IdSel) },
);

const keySel: fc.Arbitrary<KeySel> = fc.oneof(
  { weight: 24, arbitrary: fc.constant({ kind: 'pool' } as KeySel) },
  { weight: 1, arbitrary: fc.constant({ kind: 'none' } as KeySel) },
  { weight: 1, arbitrary: fc.constant({ kind: 'mcp' } as KeySel) },
  { weight: 1, arbitrary: fc.constant({ kind: 'revoked' } as KeySel) },
  {
    weight: 2,
    arbitrary: fc
      .oneof(
        fc.constantFrom('', ' ', 'acs_org_', 'acs_mcp_', 'Bearer x', 'null', 'k'.repeat(4000)),
        fc.stringMatching(/^acs_(org|mcp)_[A-Za-z0-9]{32,44}$/),
        printable(200),
      )
      .map((value) => ({ kind: 'raw', value }) as KeySel),
  },
);

const keyHeader = fc.oneof(
  { weight: 30, arbitrary: fc.constant('x-api-key') },
  { weight: 2, arbitrary: fc.constantFrom('X-API-Key', 'X-API-KEY', 'x-Api-Key', 'api-key', 'authorization', 'x-api_key') },
);

const contentType: fc.Arbitrary<string | null> = fc.oneof(
  { weight: 24, arbitrary: fc.constant('application/json') },
  {
    weight: 3,
    arbitrary: fc.constantFrom(
      'application/json; charset=utf-8',
      'Application/JSON',
      'application/json;charset=latin1',
      'text/plain',
      'application/x-www-form-urlencoded',
      'multipart/form-data; boundary=xyz',
      'application/problem+json',
      'application/jsonx',
      'json',
      '',
      '*/*',
      'application/octet-stream',
      'text/json',
      'application/json, text/plain',
    ),
  },
  { weight: 1, arbitrary: printable(60) },
  { weight: 1, arbitrary: fc.constant(null) },
);

const RESERVED_HEADERS = new Set(['content-length', 'transfer-encoding', 'host', 'connection', 'content-type', 'x-api-key', 'expect', 'upgrade', 'te', 'trailer', 'keep-alive', 'authorization', 'api-key']);

const extraHeaders: fc.Arbitrary<Record<string, string>> = fc
  .record(
    {
      random: fc.dictionary(fc.stringMatching(/^[a-z][a-z0-9-]{0,20}$/), printable(100), { maxKeys: 3 }),
      requestId: fc.option(printable(300), { nil: undefined }),
      idempotency: fc.option(fc.oneof(printable(300), fc.uuid()), { nil: undefined }),
      filler: fc.option(fc.nat(6000).map((n) => 'f'.repeat(n)), { nil: undefined }),
      accept: fc.option(fc.constantFrom('*/*', 'text/html', 'application/xml', 'application/problem+json', ''), { nil: undefined }),
      encoding: fc.option(fc.constantFrom('gzip', 'br', 'identity', 'x-unknown'), { nil: undefined }),
    },
    { requiredKeys: [] },
  )
  .map((h) => {
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(h.random ?? {})) if (!RESERVED_HEADERS.has(k)) out[k] = v;
    if (h.requestId !== undefined) out['x-request-id'] = h.requestId;
    if (h.idempotency !== undefined) out['idempotency-key'] = h.idempotency;
    if (h.filler !== undefined) out['x-filler'] = h.filler;
    if (h.accept !== undefined) out.accept = h.accept;
    if (h.encoding !== undefined) out['content-encoding'] = h.encoding;
    return out;
  });

/** A reference to a world id inside a body, replaced when the request is sent. */
const ref = (name: keyof World) => ({ $ref: name });
const anyRef = fc.constantFrom(ref('a1'), ref('a2'), ref('h1'), ref('teamId'), ref('attachmentId'), ref('messageId'));

const name100 = fc.oneof(fc.string({ minLength: 1, maxLength: 100 }).filter((x) => x.trim().length > 0), fc.constantFrom('a', 'n'.repeat(100), ' padded '));
const text4000 = fc.oneof(fc.string({ maxLength: 200 }), fc.constant('d'.repeat(4000)));
const content = fc.oneof(fc.string({ minLength: 1, maxLength: 300 }).filter((x) => x.trim().length > 0), fc.constant('# md\n\n- *x*'));
const channel = fc.stringMatching(/^[a-z][a-z0-9_-]{0,31}$/);
// Providers that the agent loop runs here (echo; openai and anthropic are left out too) are left
// out of agent bodies: a running agent writes replies on its own, which the no-write check would misread.
const agentProvider = fc.constantFrom(null, 'google', 'mistral', 'groq', 'openrouter');
const email = fc.oneof(fc.emailAddress(), fc.constant(null));

const agentFields = {
  name: name100,
  description: text4000,
  provider: agentProvider,
  model: fc.oneof(fc.constant(null), fc.string({ maxLength: 40 })),
  instructions: text4000,
  status: fc.constantFrom('active', 'paused'),
};

const bodies = {
  org: fc.record({ org_name: name100 }),
  team: fc.record({ team_name: name100, description: text4000 }, { requiredKeys: ['team_name'] }),
  teamPatch: fc.record({ team_name: name100, description: text4000 }, { requiredKeys: [] }),
  agent: fc.record(agentFields, { requiredKeys: ['name'] }),
  agentPatch: fc.record(agentFields, { requiredKeys: [] }),
  human: fc.record({ name: name100, email }, { requiredKeys: ['name'] }),
  humanPatch: fc.record({ name: name100, email }, { requiredKeys: [] }),
  edge: fc.record({ participants: fc.tuple(anyRef, anyRef) }),
  thread: fc.record(
    { sender_agent_id: fc.constantFrom(ref('a1'), ref('h1'), ref('a2')), subject: fc.string({ maxLength: 200 }), content, channel },
    { requiredKeys: ['sender_agent_id', 'content'] },
  ),
  message: fc.record(
    { sender_agent_id: fc.constantFrom(ref('a1'), ref('h1'), ref('a2')), content, attachments: fc.array(fc.constantFrom(ref('attachmentId'), ref('messageId')), { maxLength: 2 }) },
    { requiredKeys: ['sender_agent_id', 'content'] },
  ),
  attachment: fc.record({
    filename: fc.string({ minLength: 1, maxLength: 50 }),
    content_type: fc.constantFrom('text/plain', 'application/octet-stream', 'image/png', 'application/json'),
    data_base64: fc.uint8Array({ maxLength: 200 }).map((b) => Buffer.from(b).toString('base64')),
  }),
  providerKey: fc.record({ api_key: fc.oneof(fc.stringMatching(/^sk-[A-Za-z0-9]{20,40}$/), fc.string({ minLength: 1, maxLength: 60 })) }),
  orgKey: fc.record(
    { name: fc.string({ maxLength: 100 }), expires_at: fc.integer({ min: 60, max: 10_000_000 }).map((s) => new Date(Date.now() + s * 1000).toISOString()) },
    { requiredKeys: [] },
  ),
  rotate: fc.record({ grace_seconds: fc.nat(200_000) }, { requiredKeys: [] }),
  accessRequest: fc.record({ email: fc.emailAddress(), org_name: name100, intended_use: fc.string({ minLength: 1, maxLength: 300 }) }),
  mcp: fc.record({
    jsonrpc: fc.constantFrom('2.0', '1.0'),
    id: fc.oneof(fc.nat(), fc.string({ maxLength: 10 })),
    method: fc.constantFrom('initialize', 'tools/list', 'tools/call', 'ping', 'nope'),
    params: fc.oneof(
      fc.constant({ protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'fuzz', version: '1' } }),
      fc.record({ name: fc.constantFrom('whoami', 'list_edges', 'list_threads', 'read_thread', 'nope'), arguments: fc.dictionary(fc.string({ maxLength: 10 }), fc.jsonValue({ maxDepth: 2 })) }),
      fc.jsonValue({ maxDepth: 2 }),
    ),
  }),
} satisfies Record<string, fc.Arbitrary<Record<string, unknown>>>;

const wrongType = fc.oneof(fc.integer(), fc.double(), fc.boolean(), fc.constant(null), fc.array(fc.jsonValue({ maxDepth: 1 }), { maxLength: 3 }), fc.object({ maxDepth: 1 }));

/** The valid body of `valid`, or a mutation of it, or something that is not a JSON object at all. */
function bodyArb(valid: fc.Arbitrary<Record<string, unknown>> | null): fc.Arbitrary<BodySel> {
  const base = valid ?? fc.constant({} as Record<string, unknown>);
  const json = (value: unknown): BodySel => ({ kind: 'json', value });
  const mutated = base.chain((b) => {
    const keys = Object.keys(b);
    const pickKey = keys.length ? fc.constantFrom(...keys) : fc.string({ maxLength: 12 });
    return fc.oneof(
      pickKey.map((k) => json(Object.fromEntries(Object.entries(b).filter(([key]) => key !== k)))),
      fc.tuple(pickKey, wrongType).map(([k, v]) => json({ ...b, [k]: v })),
      fc.tuple(fc.string({ maxLength: 20 }), fc.jsonValue({ maxDepth: 2 })).map(([k, v]) => json({ ...b, [k]: v })),
      fc.tuple(pickKey, fc.integer({ min: 4001, max: 200_000 }), fc.constantFrom('x', 'é', '🙂', '\u0000')).map(([k, n, c]) => json({ ...b, [k]: c.repeat(n) })),
      fc.tuple(pickKey, nastyString).map(([k, v]) => json({ ...b, [k]: v })),
      pickKey.map((k) => json({ ...b, [k]: null })),
      // expanded when sent (resolveRefs): fast-check could not print a counterexample this deep
      fc.tuple(pickKey, fc.integer({ min: 50, max: 3000 })).map(([k, d]) => json({ ...b, [k]: { $deep: d } })),
      fc.tuple(fc.string({ maxLength: 8 }), fc.string({ maxLength: 8 })).map(([k, v]) => json({ ...b, ['__proto__']: { [k]: v }, constructor: { prototype: { polluted: true } } })),
    );
  });
  return fc.oneof(
    { weight: 6, arbitrary: base.map(json) },
    { weight: 8, arbitrary: mutated },
    { weight: 1, arbitrary: fc.jsonValue({ maxDepth: 3 }).map(json) },
    { weight: 1, arbitrary: fc.constant({ kind: 'none' } as BodySel) },
    {
      weight: 2,
      arbitrary: fc.oneof(
        fc.string({ maxLength: 200 }),
        fc.constantFrom('', '{', '{"a":1,}', '{"a":1}{"b":2}', "{'a':1}", 'undefined', 'NaN', '[1,2', '\ufeff{}', '{"a":"\\ud800"}', '{"a":"\\u0000"}', 'null'),
        base.map((b) => JSON.stringify(b).slice(0, -1)),
      ).map((value) => ({ kind: 'text', value }) as BodySel),
    },
    { weight: 1, arbitrary: fc.tuple(fc.integer({ min: 2000, max: 20_000 }), fc.boolean()).map(([depth, array]) => ({ kind: 'deep', depth, array }) as BodySel) },
    { weight: 1, arbitrary: fc.constant({ kind: 'big' } as BodySel) },
  );
}

const queryArb = (thread: boolean): fc.Arbitrary<Array<[string, unknown]>> => {
  const qKey = fc.oneof(fc.constantFrom('after', 'limit', 'wait', 'cursor', 'page', 'x', 'after[]', 'limit[0]'), fc.string({ maxLength: 10 }));
  const qVal = fc.oneof(
    fc.constantFrom('', '0', '-1', '1', '2', '50', '200', '201', '1e2', '2.5', 'abc', 'null', '%', '%ZZ', '[]', '00000000-0000-0000-0000-000000000000'),
    fc.string({ maxLength: 40 }),
    fc.uuid(),
    fc.constant(ref('messageId')),
    fc.constant(ref('a1')),
  );
  const pairs = fc.array(fc.tuple(qKey, qVal), { maxLength: thread ? 4 : 2 });
  return fc.oneof({ weight: 2, arbitrary: fc.constant<Array<[string, unknown]>>([]) }, { weight: 3, arbitrary: pairs as fc.Arbitrary<Array<[string, unknown]>> });
};

// ---------------------------------------------------------------------------------------------
// Routes

interface FuzzRoute {
  method: string;
  /** Path relative to the prefix, with `{placeholder}` segments. */
  template: string;
  body: fc.Arbitrary<Record<string, unknown>> | null;
  /** Also served without a prefix. */
  unprefixed?: boolean;
  /** The MCP endpoint: JSON-RPC errors are allowed there once the MCP key is accepted. */
  mcp?: boolean;
  /** Served without a key. */
  open?: boolean;
}

const ROUTES: FuzzRoute[] = [
  { method: 'GET', template: '/organizations', body: null },
  { method: 'POST', template: '/organizations', body: bodies.org },
  { method: 'GET', template: '/organizations/{org}', body: null },
  { method: 'POST', template: '/organizations/{org}/teams', body: bodies.team },
  { method: 'GET', template: '/organizations/{org}/teams', body: null },
  { method: 'GET', template: '/teams/{team}', body: null },
  { method: 'PATCH', template: '/teams/{team}', body: bodies.teamPatch },
  { method: 'DELETE', template: '/teams/{team}', body: null },
  { method: 'GET', template: '/teams/{team}/deletion-preview', body: null },
  { method: 'POST', template: '/teams/{team}/agents', body: bodies.agent },
  { method: 'GET', template: '/teams/{team}/agents', body: null },
  { method: 'GET', template: '/agents/{agent}', body: null },
  { method: 'PATCH', template: '/agents/{agent}', body: bodies.agentPatch },
  { method: 'DELETE', template: '/agents/{agent}', body: null },
  { method: 'POST', template: '/teams/{team}/humans', body: bodies.human },
  { method: 'GET', template: '/teams/{team}/humans', body: null },
  { method: 'GET', template: '/humans/{human}', body: null },
  { method: 'PATCH', template: '/humans/{human}', body: bodies.humanPatch },
  { method: 'DELETE', template: '/humans/{human}', body: null },
  { method: 'POST', template: '/teams/{team}/edges', body: bodies.edge },
  { method: 'GET', template: '/teams/{team}/edges', body: null },
  { method: 'GET', template: '/edges/{edge}', body: null },
  { method: 'DELETE', template: '/edges/{edge}', body: null },
  { method: 'POST', template: '/edges/{edge}/threads', body: bodies.thread },
  { method: 'GET', template: '/edges/{edge}/threads', body: null },
  { method: 'GET', template: '/threads/{thread}', body: null },
  { method: 'POST', template: '/threads/{thread}/messages', body: bodies.message },
  { method: 'POST', template: '/attachments', body: bodies.attachment },
  { method: 'GET', template: '/attachments/{attachment}', body: null },
  { method: 'GET', template: '/attachments/{attachment}/content', body: null },
  { method: 'PUT', template: '/organizations/{org}/api-keys/{provider}', body: bodies.providerKey, unprefixed: true },
  { method: 'GET', template: '/organizations/{org}/api-keys', body: null },
  { method: 'DELETE', template: '/organizations/{org}/api-keys/{provider}', body: null },
  { method: 'POST', template: '/organizations/{org}/keys', body: bodies.orgKey },
  { method: 'GET', template: '/organizations/{org}/keys', body: null },
  { method: 'POST', template: '/organizations/{org}/keys/{orgkey}/rotate', body: bodies.rotate },
  { method: 'DELETE', template: '/organizations/{org}/keys/{orgkey}', body: null },
  { method: 'POST', template: '/agents/{agent}/mcp-keys', body: null },
  { method: 'GET', template: '/agents/{agent}/mcp-keys', body: null },
  { method: 'DELETE', template: '/agents/{agent}/mcp-keys/{mcpkey}', body: null },
  { method: 'POST', template: '/access-requests', body: bodies.accessRequest, open: true },
  ...(MCP_ENDPOINT_BUILT ? [{ method: 'POST', template: '/mcp', body: bodies.mcp, mcp: true } as FuzzRoute] : []),
];

function placeholders(template: string): Placeholder[] {
  return [...template.matchAll(/\{(\w+)\}/g)].map((m) => m[1] as Placeholder);
}

function fuzzArb(route: FuzzRoute): fc.Arbitrary<Fuzzed> {
  const holes = placeholders(route.template);
  const prefixes = route.unprefixed ? ['/api/v1', '/v1', ''] : ['/api/v1', '/v1'];
  return fc.record({
    method: fc.oneof({ weight: 12, arbitrary: fc.constant(route.method) }, { weight: 1, arbitrary: fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE') }),
    prefix: fc.oneof({ weight: 6, arbitrary: fc.constantFrom(...prefixes) }, { weight: 1, arbitrary: fc.constantFrom('/api/v2', '/API/V1', '/api//v1', '/api/v1/', '/api/v1/..') }),
    ids: fc.tuple(...holes.map((h) => (h === 'provider' ? providerSel : idSel))) as fc.Arbitrary<IdSel[]>,
    query: queryArb(route.template === '/threads/{thread}'),
    key: route.mcp ? fc.oneof({ weight: 6, arbitrary: fc.constant({ kind: 'mcp' } as KeySel) }, { weight: 3, arbitrary: keySel }) : keySel,
    keyHeader,
    contentType,
    headers: route.mcp
      ? extraHeaders.chain((h) => fc.constantFrom('application/json, text/event-stream', 'application/json', '*/*').map((accept) => ({ accept, ...h })))
      : extraHeaders,
    body: bodyArb(route.body),
  });
}

// ---------------------------------------------------------------------------------------------
// Sending and checking

function realId(hole: Placeholder): string {
  const map: Record<Placeholder, string> = {
    org: w.orgId,
    team: w.teamId,
    agent: w.a1,
    human: w.h1,
    edge: w.e1,
    thread: w.threadId,
    attachment: w.attachmentId,
    orgkey: w.keyId,
    mcpkey: w.mcpKeyId,
    provider: 'mistral',
  };
  return map[hole];
}

function resolveId(hole: Placeholder, sel: IdSel): string {
  switch (sel.kind) {
    case 'raw':
      return sel.value;
    case 'real':
      return realId(hole);
    case 'realVariant': {
      const id = realId(hole);
      return [id.toUpperCase(), `${id}%20`, `${id}x`, id.slice(0, -1), `${id}/..`, `%7B${id}%7D`][sel.variant] ?? id;
    }
    case 'other': {
      const others = [w.devOrgId, w.orgId, w.teamId, w.a1, w.a2, w.h1, w.e1, w.threadId, w.messageId, w.attachmentId, w.anchorKeyId, w.keyId, w.mcpKeyId];
      return others[sel.index % others.length]!;
    }
  }
}

function resolveRefs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(resolveRefs);
  if (value && typeof value === 'object') {
    const keys = Object.keys(value);
    if (keys.length === 1 && keys[0] === '$ref') return w[(value as { $ref: keyof World }).$ref];
    if (keys.length === 1 && keys[0] === '$deep') {
      let nested: unknown = 1;
      for (let i = 0; i < (value as { $deep: number }).$deep; i++) nested = [nested];
      return nested;
    }
    const out: Record<string, unknown> = {};
    for (const k of keys) out[k] = resolveRefs((value as Record<string, unknown>)[k]);
    return out;
  }
  return value;
}

function serialize(body: BodySel): string | undefined {
  switch (body.kind) {
    case 'none':
      return undefined;
    case 'json':
      return JSON.stringify(resolveRefs(body.value));
    case 'text':
      return body.value;
    case 'big':
      return `{"description":"${'b'.repeat(1024 * 1024 + 100)}"}`;
    case 'deep':
      return body.array ? `${'['.repeat(body.depth)}1${']'.repeat(body.depth)}` : `${'{"a":'.repeat(body.depth)}1${'}'.repeat(body.depth)}`;
  }
}

function buildRequest(route: FuzzRoute, f: Fuzzed): { method: string; path: string; headers: Record<string, string>; body?: string } {
  const holes = placeholders(route.template);
  let i = 0;
  const path = route.template.replace(/\{(\w+)\}/g, () => {
    const hole = holes[i]!;
    return resolveId(hole, f.ids[i++]!);
  });
  const query = f.query
    .map(([k, v]) => {
      let value = typeof v === 'string' ? v : String(resolveRefs(v));
      // a valid positive wait could hold a request for up to 30 s; keep fuzzing fast
      if (k === 'wait' && Number(value) > 0) value = '0';
      // raw '%…' values test the server's decoding; only printable ASCII can be sent raw at all
      return `${safeEncode(k)}=${/^%[\x21-\x7e]*$/.test(value) ? value : safeEncode(value)}`;
    })
    .join('&');
  const headers: Record<string, string> = { ...f.headers };
  const key = f.key.kind === 'pool' ? nextKey() : f.key.kind === 'mcp' ? w.mcpKey : f.key.kind === 'revoked' ? w.revokedKey : f.key.kind === 'raw' ? f.key.value : undefined;
  if (key !== undefined) headers[f.keyHeader] = f.keyHeader === 'authorization' ? `Bearer ${key}` : key;
  if (f.contentType !== null) headers['content-type'] = f.contentType;
  return { method: f.method, path: `${f.prefix}${path}${query ? `?${query}` : ''}`, headers, body: serialize(f.body) };
}

function isJsonRpcError(reply: RawReply): boolean {
  return reply.body && typeof reply.body === 'object' && reply.body.jsonrpc === '2.0' && typeof reply.body.error === 'object';
}

/** Checks one response against the properties; returns a description of the first broken one. */
function violations(route: FuzzRoute, request: ReturnType<typeof buildRequest>, reply: RawReply, mcpKeyUsed: boolean): string | undefined {
  if (reply.status >= 500) return `status ${reply.status}`;
  if (!reply.headers['x-request-id']) return 'no X-Request-Id';
  if (leaksInternals(reply.text)) return 'body shows a stack trace or a source path';
  // A replay (§1) returns the stored status and body: a creation response holds the key it
  // created once, and the body's request_id is the first request's.
  const replayed = reply.headers['idempotent-replayed'] === 'true';
  if (!replayed) for (const secret of secrets) if (reply.text.includes(secret)) return `body contains a secret starting ${secret.slice(0, 12)}`;
  if (reply.status >= 400 && request.method !== 'HEAD') {
    if (route.mcp && mcpKeyUsed && isJsonRpcError(reply)) return undefined;
    const type = String(reply.headers['content-type'] ?? '');
    if (!type.startsWith('application/problem+json')) return `error with Content-Type ${type}`;
    const b = reply.body;
    if (!b || typeof b !== 'object') return 'error body is not JSON';
    if (!(b.code in ERROR_CODES)) return `code ${b.code} is not in §2`;
    if (ERROR_CODES[b.code] !== reply.status) return `code ${b.code} with status ${reply.status}`;
    if (b.type !== `urn:acs:error:${b.code}` || b.status !== reply.status || typeof b.title !== 'string' || typeof b.detail !== 'string') return 'problem fields';
    if (!replayed && b.request_id !== reply.headers['x-request-id']) return 'request_id differs from X-Request-Id';
    if (b.code === 'invalid_request' && !(Array.isArray(b.errors) && b.errors.length > 0)) return 'invalid_request without errors[]';
  }
  return undefined;
}

function remember(route: FuzzRoute, request: ReturnType<typeof buildRequest>, reply: RawReply): void {
  if (reply.status >= 200 && reply.status < 300 && reply.body && typeof reply.body === 'object') {
    for (const field of ['api_key', 'mcp_key']) {
      const value = reply.body[field];
      if (typeof value === 'string' && value.length >= 8) secrets.add(value);
    }
    if (route.method === 'PUT' && request.body) {
      try {
        const value = JSON.parse(request.body).api_key;
        if (typeof value === 'string' && value.length >= 8) secrets.add(value);
      } catch {
        // not JSON: nothing was set
      }
    }
  }
  const routeStats = (stats[`${route.method} ${route.template}`] ??= {});
  routeStats[reply.status] = (routeStats[reply.status] ?? 0) + 1;
}

async function runOne(route: FuzzRoute, f: Fuzzed): Promise<void> {
  const request = buildRequest(route, f);
  let reply: RawReply;
  try {
    reply = await rawCall(s.baseUrl, request.method, request.path, request.headers, request.body);
  } catch (error) {
    throw new Error(`${request.method} ${request.path}: no response (${(error as Error).message})`);
  }
  const broken = violations(route, request, reply, f.key.kind === 'mcp');
  remember(route, request, reply);
  const label = `${request.method} ${request.path.slice(0, 200)} -> ${reply.status} ${reply.body?.code ?? ''}`;
  const wrote = await settle(request.method, reply, route.mcp === true);
  if (broken) throw new Error(`${label}: ${broken}\n${reply.text.slice(0, 500)}`);
  if (wrote) throw new Error(`${label}: a rejected request changed the organizations' state`);
}

/**
 * After a response: a rejected request (4xx) must have left the state as it was (returns true
 * when it did not); an accepted write moves the baseline, after the world is put back in shape.
 */
async function settle(method: string, reply: RawReply, mcp: boolean): Promise<boolean> {
  if (reply.status >= 400) {
    const after = await snapshot();
    const changed = after !== baseline;
    baseline = after;
    return changed;
  }
  if (method !== 'GET' || mcp) {
    await ensureWorld();
    baseline = await snapshot();
  }
  return false;
}

describe('bad input', () => {
  for (const route of ROUTES) {
    it(`${route.method} ${route.template}: random and mutated requests never give a 5xx, a non-problem error, a leak or a write when rejected`, async () => {
      await ensureWorld();
      baseline = await snapshot();
      await fc.assert(
        fc.asyncProperty(fuzzArb(route), (f) => runOne(route, f)),
        { numRuns: RUNS, seed: SEED, interruptAfterTimeLimit: 20_000, markInterruptAsFailure: false },
      );
    }, 240_000);
  }

  it('random paths and methods under /api/v1 and /v1 give problem+json errors with codes of §2 and no 5xx', async () => {
    const segment = fc.oneof(junkSegment, fc.constantFrom('organizations', 'teams', 'agents', 'humans', 'edges', 'threads', 'messages', 'attachments', 'keys', 'mcp-keys', 'api-keys', 'rotate', 'content', 'deletion-preview'));
    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('/api/v1', '/v1', '', '/admin/v1'),
        fc.array(segment, { minLength: 0, maxLength: 6 }),
        fc.constantFrom('GET', 'POST', 'PUT', 'PATCH', 'DELETE'),
        keySel,
        async (prefix, segments, method, key) => {
          const route: FuzzRoute = { method, template: '/random', body: null };
          const f: Fuzzed = { method, prefix: '', ids: [], query: [], key, keyHeader: 'x-api-key', contentType: 'application/json', headers: {}, body: method === 'GET' || method === 'DELETE' ? { kind: 'none' } : { kind: 'json', value: {} } };
          const request = buildRequest(route, f);
          request.path = `${prefix}/${segments.join('/')}`;
          const reply = await rawCall(s.baseUrl, request.method, request.path, request.headers, request.body);
          const broken = violations(route, request, reply, false);
          remember(route, request, reply);
          const wrote = await settle(method, reply, false);
          if (broken) throw new Error(`${method} ${request.path.slice(0, 200)} -> ${reply.status}: ${broken}\n${reply.text.slice(0, 500)}`);
          if (wrote) throw new Error(`${method} ${request.path.slice(0, 200)} -> ${reply.status}: a rejected request changed the organizations' state`);
        },
      ),
      { numRuns: RUNS * 2, seed: SEED, interruptAfterTimeLimit: 20_000, markInterruptAsFailure: false },
    );
  }, 240_000);

  it('the fixture is intact: the world the runs aimed at still answers', async () => {
    await ensureWorld();
    expect(await ok(`/teams/${w.teamId}`)).toBe(true);
  });
});
