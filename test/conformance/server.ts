/**
 * The conformance suites' view of the service: a server started as a user starts it
 * (`acs-server start --in-memory --port 0 --dev-credentials FILE`, docs/cli.md) and a plain `fetch`
 * client written from the API contract (docs/development.md, "Conformance suites") alone. No project code is imported,
 * so these suites judge the service only by what goes over the wire.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';

const repoRoot = resolve(import.meta.dirname, '..', '..');

/** A running `acs-server` child process and the dev credentials it wrote. */
export interface Server {
  baseUrl: string;
  apiKey: string;
  orgId: string;
  /** Everything the process printed so far (stdout and stderr). */
  output(): string;
  /** Sends SIGTERM and waits for the process to exit (SIGKILL after 10 s). */
  stop(): Promise<void>;
}

/**
 * Starts `node bin/acs-server.ts start --in-memory --port 0 --tick-ms 50 --dev-credentials FILE`
 * (and `args`) with `env` added to the environment (`ACS_AGENT_PROVIDERS=echo` unless `env` says otherwise), waits (up to 60 s) until FILE holds
 * `{base_url, api_key, org_id}` (contract §6) and returns them. Throws with the process output
 * when it exits or never writes the file.
 */
export async function startServer(options: { env?: Record<string, string>; args?: string[] } = {}): Promise<Server> {
  const dir = await mkdtemp(join(tmpdir(), 'acs-conformance-'));
  const file = join(dir, 'dev.json');
  const child: ChildProcess = spawn(
    join(repoRoot, 'node_modules', '.bin', 'node'),
    ['bin/acs-server.ts', 'start', '--in-memory', '--port', '0', '--tick-ms', '50', '--dev-credentials', file, ...(options.args ?? [])],
    // The agent loop runs the echo provider only: an agent of a vendor's provider that a suite
    // creates must never call out to that vendor (ACS_AGENT_PROVIDERS, docs/operating-acs-server.md "Configuration").
    { cwd: repoRoot, env: { ...process.env, ACS_AGENT_PROVIDERS: 'echo', ...options.env }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let output = '';
  child.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  child.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString('utf8')));
  const exited = new Promise<number | null>((done) => child.once('exit', (code) => done(code)));
  let exitCode: number | null | undefined;
  void exited.then((code) => (exitCode = code));

  const deadline = Date.now() + 60_000;
  let creds: { base_url: string; api_key: string; org_id: string } | undefined;
  while (!creds) {
    if (exitCode !== undefined) throw new Error(`acs-server exited (${exitCode}) before writing credentials:\n${output}`);
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`acs-server wrote no credentials within 60 s:\n${output}`);
    }
    try {
      const parsed = JSON.parse(await readFile(file, 'utf8'));
      if (parsed.base_url && parsed.api_key && parsed.org_id) creds = parsed;
    } catch {
      // not written (completely) yet
    }
    if (!creds) await new Promise((r) => setTimeout(r, 50));
  }
  const found = creds;
  return {
    baseUrl: found.base_url.replace(/\/$/, ''),
    apiKey: found.api_key,
    orgId: found.org_id,
    output: () => output,
    async stop() {
      if (exitCode === undefined) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        await exited;
        clearTimeout(timer);
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** A response as the suites look at it: `body` is parsed JSON when the text is JSON. */
export interface Reply {
  status: number;
  headers: Headers;
  text: string;
  body: any;
}

/** What `call` sends besides method and path. */
export interface CallOptions {
  /** Sent as `X-API-Key` unless `null`. */
  key?: string | null;
  /** Serialized as JSON (with `Content-Type: application/json`) unless it is a string or bytes. */
  body?: unknown;
  headers?: Record<string, string>;
}

/**
 * One HTTP request with plain `fetch`: `path` is appended to `baseUrl` as is. An object body is
 * sent as JSON with `Content-Type: application/json` unless `headers` name a Content-Type.
 */
export async function call(baseUrl: string, method: string, path: string, options: CallOptions = {}): Promise<Reply> {
  const headers: Record<string, string> = {};
  if (options.key) headers['x-api-key'] = options.key;
  let body: string | Uint8Array | undefined;
  if (options.body !== undefined) {
    body = typeof options.body === 'string' || options.body instanceof Uint8Array ? options.body : JSON.stringify(options.body);
    headers['content-type'] = 'application/json';
  }
  for (const [name, value] of Object.entries(options.headers ?? {})) {
    if (name.toLowerCase() === 'content-type') delete headers['content-type'];
    headers[name] = value;
  }
  const response = await fetch(baseUrl + path, { method, headers, body: body as BodyInit | undefined });
  const text = await response.text();
  return { status: response.status, headers: response.headers, text, body: parseJson(text) };
}

/** A response of `rawCall`: headers as Node gives them (lower-case names). */
export interface RawReply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
  body: any;
}

/**
 * One HTTP request with `node:http`, for what `fetch` would normalize away: the path is sent
 * byte for byte (`..`, `%2e%2e`, malformed percent-escapes), headers exactly as given (no
 * Content-Type is added), the body as given.
 */
export function rawCall(baseUrl: string, method: string, rawPath: string, headers: Record<string, string>, body?: string | Buffer): Promise<RawReply> {
  const url = new URL(baseUrl);
  return new Promise((done, fail) => {
    // A server may answer (413) and close before the whole body is written: the write then
    // fails with EPIPE/ECONNRESET while the response is already on its way.
    let responded = false;
    const req = httpRequest(
      { host: url.hostname, port: url.port, method, path: rawPath, headers: { ...headers, ...(body !== undefined ? { 'content-length': String(Buffer.byteLength(body)) } : {}) } },
      (res) => {
        responded = true;
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          done({ status: res.statusCode ?? 0, headers: res.headers, text, body: parseJson(text) });
        });
        res.on('error', fail);
      },
    );
    req.on('error', (error) => {
      if (!responded) fail(error);
    });
    if (body !== undefined) req.write(body);
    req.end();
  });
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** Status of every error code of contract §2 (and the two §9 adds: `webhook_url_refused`, `events_expired`). */
export const ERROR_CODES: Readonly<Record<string, number>> = {
  malformed_json: 400,
  invalid_request: 400,
  invalid_cursor: 400,
  webhook_url_refused: 400,
  unauthenticated: 401,
  invalid_api_key: 401,
  wrong_key_type: 403,
  forbidden: 403,
  not_a_participant: 403,
  csrf_failed: 403,
  not_found: 404,
  route_not_found: 404,
  method_not_allowed: 405,
  conflict: 409,
  last_key: 409,
  key_limit: 409,
  in_use: 409,
  deletion_protected: 409,
  idempotency_key_in_use: 409,
  events_expired: 410,
  payload_too_large: 413,
  unsupported_media_type: 415,
  unknown_reference: 422,
  idempotency_key_mismatch: 422,
  rate_limited: 429,
  internal: 500,
  unavailable: 503,
};

/** ISO 8601 UTC with milliseconds and `Z` (contract §1). */
export const ISO_MS_Z = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** A UUID string (contract §1). */
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** A UUID that names nothing (random v4). */
export function freshUuid(): string {
  return crypto.randomUUID();
}

/** A name unique within this process, for resources whose names must not collide. */
export function uniqueName(prefix: string): string {
  return `${prefix}-${crypto.randomUUID().slice(0, 8)}`;
}
