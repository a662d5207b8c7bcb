/**
 * The YAML form of a remote A2A agent (contract §12, "A2A participants"): an agent with
 * `a2a: {url, headers?}` instead of a provider is an agent of another framework, reached over the
 * Agent2Agent protocol; the service sends it the messages and tasks on its edges.
 *
 * The URL is the wire's own schema (`api/remote-a2a.ts` `A2aAgentUrl`, normalized as the service
 * stores it), and header values are secret templates (`Bearer ${env:SCOUT_TOKEN}`: `secrets.ts`),
 * never secrets, as in an MCP server's `headers` (`agent-tools-schema.ts`). Rules across keys (no
 * provider, model or tools beside it; https unless loopback; header names once) are in
 * `a2a-semantics.ts`; the mapping to the wire is `plan/desired.ts`.
 */
import { z } from 'zod';
import { HeaderName } from '../api/agent-tools.ts';
import { A2aAgentUrl } from '../api/remote-a2a.ts';
import { secretTemplateSchema } from './secrets.ts';

/** An agent's `a2a`, as a definition writes it. */
export const A2aDefinitionSchema = z
  .strictObject({
    url: A2aAgentUrl.describe(
      "The remote agent's base URL, its Agent Card at {url}/.well-known/agent-card.json (or the card's own URL when it ends in .json): https (plain http only for a loopback host — localhost, 127.0.0.0/8, ::1 — with a server run with --webhook-allow-private, which it needs for private addresses too)",
    ),
    headers: z
      .record(HeaderName, secretTemplateSchema())
      .optional()
      .describe('Headers sent with every request to the remote agent (its card included), e.g. Authorization: Bearer ${env:SCOUT_TOKEN}; each value holds at least one ${env:NAME} reference, resolved only when apply sends it'),
  })
  .describe('A remote A2A agent (an agent of another framework, over the Agent2Agent protocol): the service sends it each message and task on its edges and records its answers. Instead of provider, model and tools; its card is read by plan, apply and validate --remote');
export type A2aDefinition = z.infer<typeof A2aDefinitionSchema>;
