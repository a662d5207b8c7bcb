/**
 * Reading a remote A2A agent's Agent Card from teamctl (contract §12, "A2A participants"): `plan`
 * shows its name and skills, `apply` checks it before it creates or changes the agent, and
 * `validate --remote` fails on one that cannot be read or does not parse. The check is the one
 * acs-server makes before it sends (`api/remote-a2a.ts` `checkAgentCard`), from the same URL
 * (`remoteCardUrl`), with the agent's headers: those are resolved by the caller, an activity, and
 * never appear in what this returns (a header value the remote echoes is redacted).
 */
import { checkAgentCard, remoteCardUrl, type RemoteCardSummary } from '../api/remote-a2a.ts';
import { ToolkitError } from '../errors/catalogue.ts';
import { SENSITIVE } from '../plan/types.ts';

/** How long one card may take to arrive by default: a plan must not hang on a remote that is down. */
export const CARD_TIMEOUT_MS = 5_000;

/** The most bytes of a card read: a card is a few KiB; a remote that sends more is not read further. */
const MAX_CARD_BYTES = 1024 * 1024;

/** What reading one remote agent's card gave: its summary, or the problem, naming the card's URL. */
export type CardVerdict = { url: string; cardUrl: string } & ({ ok: true; card: RemoteCardSummary } | { ok: false; problem: string });

/** `text` with each header value replaced by {@link SENSITIVE}: a remote's answer may quote what it was sent. */
function redacted(text: string, headers: Readonly<Record<string, string>>): string {
  let out = text;
  for (const value of Object.values(headers)) if (value.length > 0) out = out.split(value).join(SENSITIVE);
  return out;
}

/** Why a fetch failed, in a few words (the cause's code when there is one: `ECONNREFUSED`). */
function fetchFailure(error: unknown, timeoutMs: number): string {
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError')) return `no answer within ${timeoutMs / 1000} s`;
  const cause = error instanceof Error ? (error.cause as { code?: unknown; message?: unknown } | undefined) : undefined;
  if (cause && typeof cause.code === 'string') return cause.code;
  if (cause && typeof cause.message === 'string') return cause.message;
  return error instanceof Error ? error.message : String(error);
}

/**
 * Reads and checks the Agent Card of the remote agent at `url` (from `remoteCardUrl(url)`, with
 * `headers` — resolved values — and `accept: application/json`, no redirect followed, within
 * `timeoutMs`). Output: a {@link CardVerdict}; a problem (no answer, an answer other than 200, over
 * 1 MiB, not JSON, not an Agent Card) is `ok: false` with a message naming the card's URL and no
 * header value. Raises nothing.
 */
export async function readRemoteCard(
  url: string,
  headers: Readonly<Record<string, string>>,
  options: { fetch?: typeof fetch; timeoutMs?: number } = {},
): Promise<CardVerdict> {
  const timeoutMs = options.timeoutMs ?? CARD_TIMEOUT_MS;
  let cardUrl: string;
  try {
    cardUrl = remoteCardUrl(url);
  } catch {
    return { url, cardUrl: url, ok: false, problem: `${url} is not a URL` };
  }
  const refuse = (why: string): CardVerdict => ({ url, cardUrl, ok: false, problem: redacted(`the Agent Card at ${cardUrl} ${why}`, headers) });
  let text: string;
  try {
    const response = await (options.fetch ?? fetch)(cardUrl, {
      headers: { ...headers, accept: 'application/json', 'a2a-version': '1.0' },
      redirect: 'error',
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (!response.ok) {
      await response.body?.cancel().catch(() => {});
      return refuse(`cannot be read: the remote answered ${response.status}`);
    }
    if (Number(response.headers.get('content-length') ?? 0) > MAX_CARD_BYTES) {
      await response.body?.cancel().catch(() => {});
      return refuse('cannot be read: it is over 1 MiB');
    }
    text = await response.text();
  } catch (error) {
    return refuse(`cannot be read: ${fetchFailure(error, timeoutMs)}`);
  }
  if (Buffer.byteLength(text) > MAX_CARD_BYTES) return refuse('cannot be read: it is over 1 MiB');
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return refuse('does not parse: it is not JSON');
  }
  const checked = checkAgentCard(raw);
  if (!checked.ok) return refuse(`does not parse: ${checked.problem.slice(0, 500)}`);
  return { url, cardUrl, ok: true, card: checked.card };
}

/**
 * The card of the remote agent `agent` (its name, for the message) at `url`, or the error that
 * stops apply from creating or changing it: `invalid_agent_card`, naming the agent and the card's
 * URL, with why (it cannot be read, or does not parse). Input: `headers` resolved. Errors:
 * `invalid_agent_card`.
 */
export async function requireRemoteCard(agent: string, url: string, headers: Readonly<Record<string, string>>, options: { fetch?: typeof fetch; timeoutMs?: number } = {}): Promise<RemoteCardSummary> {
  const verdict = await readRemoteCard(url, headers, { timeoutMs: 10_000, ...options });
  if (!verdict.ok) throw new ToolkitError('invalid_agent_card', `remote A2A agent ${agent}: ${verdict.problem}; nothing was sent for it`);
  return verdict.card;
}
