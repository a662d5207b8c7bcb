/**
 * A remote A2A agent as a teammate (contract §12, "A2A participants"): the Agent's `a2a` as
 * request bodies take it and as the service returns it, and the check of a remote's Agent Card
 * that acs-server (before it sends) and teamctl (`plan`, `apply`, `validate --remote`) share.
 *
 * As with remote MCP servers (api/agent-tools.ts), header values are secrets: a body carries
 * them, the service stores them sealed and returns each header's name with a salted fingerprint
 * (`header_fingerprints`), by which `teamctl plan` tells whether the live value is the
 * definition's.
 */
import { z } from 'zod';
import { HeaderName, HeaderValue, maxMcpHeaders } from './agent-tools.ts';

/**
 * A remote A2A agent's URL: http or https, up to 2,048 characters; the URL its Agent Card is read
 * from is `{url}/.well-known/agent-card.json`, or `url` itself when it ends in `.json`. As remote
 * MCP servers' (contract §11, §9): https and public unless the server runs with
 * `--webhook-allow-private`.
 */
export const A2aAgentUrl = z
  .url({ protocol: /^https?$/, normalize: true })
  .max(2048)
  .meta({ pattern: '^[Hh][Tt][Tt][Pp][Ss]?://' })
  .meta({
    description:
      "The remote agent's base URL (its Agent Card at `{url}/.well-known/agent-card.json`, or the card's own URL when it ends in `.json`). An https URL whose host resolves to public addresses only, checked when set and at every connection (400 `webhook_url_refused`); a service started with `--webhook-allow-private` also takes http and private addresses.",
  });

/** Headers sent with every request to the remote agent: secrets (stored encrypted, never returned). */
const A2aHeaders = z
  .record(HeaderName, HeaderValue)
  .refine((headers) => Object.keys(headers).length <= maxMcpHeaders, `must have at most ${maxMcpHeaders} headers`)
  .refine((headers) => new Set(Object.keys(headers).map((h) => h.toLowerCase())).size === Object.keys(headers).length, 'must not name a header twice (names are case-insensitive)');

/** `a2a` as create and PATCH bodies take it (a PATCH replaces it; see `headers` for what is kept). */
export const A2aParticipantBody = z
  .strictObject({
    url: A2aAgentUrl,
    headers: A2aHeaders.optional().meta({
      description:
        'Headers sent with every request to the remote agent (an `Authorization`, say; secrets: stored encrypted, never returned). Left out in a PATCH: the headers stored are kept; `{}` removes them.',
    }),
  })
  .meta({
    id: 'A2aParticipantBody',
    description:
      'A remote A2A agent: the service sends each task and message on its edges to it and records its answers. An agent has either a provider or `a2a`, not both, and no `tools`.',
  });
export type A2aParticipantBody = z.infer<typeof A2aParticipantBody>;

/** `a2a` as the service returns it: each header's name with a fingerprint of its value, never the value. */
export const A2aParticipant = z
  .object({
    url: z.string(),
    header_fingerprints: z.record(z.string(), z.string()).meta({
      description: "Each header's name and a salted HMAC-SHA256 fingerprint of its value (`hmac-sha256:<salt>:<digest>`); the value itself is never returned.",
    }),
  })
  .meta({ id: 'A2aParticipant', description: 'A remote A2A agent: where it is, and its headers as fingerprints.' });
export type A2aParticipant = z.infer<typeof A2aParticipant>;

/** The URL a remote agent's Agent Card is read from (A2A v1.0 §8.2: the well-known path under the agent's URL). */
export function remoteCardUrl(url: string): string {
  const parsed = new URL(url);
  if (parsed.pathname.endsWith('.json')) return parsed.toString();
  parsed.pathname = `${parsed.pathname.replace(/\/+$/, '')}/.well-known/agent-card.json`;
  return parsed.toString();
}

/** What teamctl and the service show of a remote agent's card. */
export interface RemoteCardSummary {
  name: string;
  description: string;
  /** Whether the agent streams (`capabilities.streaming`). */
  streaming: boolean;
  skills: Array<{ id: string; name: string }>;
}

const Skill = z.object({ id: z.string().min(1), name: z.string().min(1) }).loose();
const Interface = z.object({ url: z.url(), protocolBinding: z.string().min(1) }).loose();
/** A2A v1.0 card (§8.1): interfaces in `supportedInterfaces`. */
const CardV1 = z
  .object({
    name: z.string().trim().min(1),
    description: z.string().optional(),
    supportedInterfaces: z.array(Interface).min(1),
    capabilities: z.object({ streaming: z.boolean().optional() }).loose().optional(),
    skills: z.array(Skill).optional(),
  })
  .loose();
/** A2A v0.3 card: its main interface in `url` (+ `preferredTransport`). */
const CardV03 = z
  .object({
    name: z.string().trim().min(1),
    description: z.string().optional(),
    url: z.url(),
    capabilities: z.object({ streaming: z.boolean().optional() }).loose().optional(),
    skills: z.array(Skill).optional(),
  })
  .loose();

/**
 * Checks `raw` (a remote agent's card, parsed from JSON) as an A2A Agent Card, v1.0
 * (`supportedInterfaces`) or v0.3 (`url`): a name, at least one interface with a URL, and skills
 * with an id and a name when it has any. Output: the card's summary, or the problems in one line
 * (each at its path). Pure: fetching is the caller's.
 */
export function checkAgentCard(raw: unknown): { ok: true; card: RemoteCardSummary } | { ok: false; problem: string } {
  const v1 = CardV1.safeParse(raw);
  const parsed = v1.success ? v1 : CardV03.safeParse(raw);
  if (!parsed.success) {
    const issues = (v1.success ? parsed : v1).error!.issues;
    return { ok: false, problem: issues.map((i) => `${i.path.length > 0 ? i.path.join('.') : '(card)'}: ${i.message}`).join('; ') };
  }
  const card = parsed.data;
  return {
    ok: true,
    card: {
      name: card.name,
      description: card.description ?? '',
      streaming: card.capabilities?.streaming === true,
      skills: (card.skills ?? []).map((s) => ({ id: s.id, name: s.name })),
    },
  };
}
