/**
 * Webhook secrets and signatures (contract §9) as Standard Webhooks defines them, with the
 * `standardwebhooks` library (the reference implementation receivers verify with).
 */
import { randomBytes } from 'node:crypto';
import { Webhook as StandardWebhook } from 'standardwebhooks';

/** Random bytes of a generated secret (contract §9 allows 24–64). */
const generatedSecretBytes = 32;

/** A new signing secret: `whsec_` and the base64 of 32 random bytes. */
export function generateWebhookSecret(): string {
  return `whsec_${randomBytes(generatedSecretBytes).toString('base64')}`;
}

/** The three Standard Webhooks headers of one delivery attempt. */
export interface SignatureHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

/**
 * Signs `body` for the delivery of event `eventId` at `at`: `webhook-id` (the event id, the same on
 * every attempt), `webhook-timestamp` (Unix seconds) and `webhook-signature` (`v1,<base64
 * HMAC-SHA256 of "{id}.{timestamp}.{body}">`, one per secret, separated by a space: during a
 * rotation's grace the new and the previous secret both sign, so a receiver holding either verifies).
 */
export function signDelivery(secrets: readonly string[], eventId: string, at: Date, body: string): SignatureHeaders {
  return {
    'webhook-id': eventId,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': secrets.map((secret) => new StandardWebhook(secret).sign(eventId, at, body)).join(' '),
  };
}
