/**
 * The route tables of docs/api.md ("Routes"), rendered from the OpenAPI document acs-server
 * serves: an in-memory server with an admin token (so the `/admin/v1` routes exist) is started
 * and asked for `/api/v1/openapi.json`, as scripts/write-openapi.ts does for the linters. One
 * table per tag, in the document's order: method, path, credential, summary, success status and
 * the error codes the route raises beyond those every route of its kind can answer. A route
 * added to the server appears here on the next `npm run docs:generate`, and the docs test fails
 * until it does.
 */
import { randomBytes } from 'node:crypto';
import { startServer } from '../../service/index.ts';
import { routeDocs } from '../../service/http/openapi/route-docs.ts';

interface Operation {
  operationId: string;
  summary: string;
  tags: string[];
  servers?: Array<{ url: string }>;
  security: Array<Record<string, unknown>>;
  responses: Record<string, unknown>;
}

/** The parts of the served OpenAPI document the route tables read. */
export interface OpenApiDocument {
  info: { description: string };
  tags: Array<{ name: string; description: string }>;
  paths: Record<string, Record<string, Operation>>;
}

/** What a credential is called in the docs (docs/api.md, "Authentication"). */
const credentials: Record<string, string> = { orgKey: 'organization key', mcpKey: 'MCP key', adminToken: 'admin token', session: 'console session' };

let served: Promise<OpenApiDocument> | undefined;

/**
 * The document the server serves, from a throwaway in-memory server started once per process
 * (the document depends only on the code). Errors: rejects when it cannot start or answer.
 */
export function servedOpenApiDocument(): Promise<OpenApiDocument> {
  served ??= fetchServedDocument();
  return served;
}

async function fetchServedDocument(): Promise<OpenApiDocument> {
  const server = await startServer({ inMemory: true, port: 0, rateLimit: false, logger: false, adminToken: randomBytes(16).toString('hex'), tickMs: 3_600_000 });
  try {
    const response = await fetch(`${server.url}/api/v1/openapi.json`);
    if (!response.ok) throw new Error(`GET /api/v1/openapi.json answered ${response.status}`);
    return (await response.json()) as OpenApiDocument;
  } finally {
    await server.close();
  }
}

/** The path as a reader types it after the base URL: relative to `/api/v1`, or as it is when served at the root. */
function pathCell(path: string, operation: Operation): string {
  const servers = operation.servers?.map((s) => s.url);
  if (!servers) return `\`${path}\``;
  if (servers.length === 1 && servers[0] === '/') return `\`${path}\` (at the root)`;
  return `\`${path}\`${servers.includes('/') ? ' (also without a prefix)' : ''}`;
}

/** The route's own codes: those its doc declares (every route also answers the common ones, docs/api.md "Errors"). */
function ownErrors(operationId: string): string {
  const doc = Object.values(routeDocs).find((d) => d.operationId === operationId);
  return (doc?.errors ?? []).map((c) => `\`${c}\``).join(', ');
}

/** The tables of every route of `document`, grouped by tag. Output: Markdown. */
export function renderRouteTables(document: OpenApiDocument): string {
  const sections: string[] = [];
  for (const tag of document.tags) {
    const rows: string[] = [];
    for (const [path, methods] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(methods)) {
        if (!operation.tags.includes(tag.name)) continue;
        const credential = operation.security.length === 0 ? 'none' : Object.keys(operation.security[0]!).map((k) => credentials[k] ?? k).join(', ');
        const success = Object.keys(operation.responses).find((s) => s.startsWith('2')) ?? '';
        rows.push(`| \`${method.toUpperCase()}\` | ${pathCell(path, operation)} | ${credential} | ${operation.summary.replace(/\|/g, '\\|')} | ${success} | ${ownErrors(operation.operationId)} |`);
      }
    }
    if (rows.length === 0) continue;
    sections.push([`#### Routes tagged \`${tag.name}\``, '', tag.description, '', '| method | path | key | what it does | success | its own error codes |', '|---|---|---|---|---|---|', ...rows].join('\n'));
  }
  return sections.join('\n\n');
}
