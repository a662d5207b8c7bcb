/**
 * Secret references of definition files: `${env:NAME}`.
 *
 * A definition file is meant to be committed, so it never holds a key itself, only the name of
 * the environment variable that holds it; the key is read at apply time and is never echoed back
 * (errors name the variable, the service shows only a hint).
 */
import { z } from 'zod';
import { providerKeyHint } from '../api/provider-key-hint.ts';
import { WebhookSecret } from '../api/events.ts';
import { ToolkitError } from '../errors/catalogue.ts';

/** What an environment variable name may look like (POSIX portable names). */
const VARIABLE = '[A-Za-z_][A-Za-z0-9_]*';
/** The whole reference, anchored; also emitted as the JSON Schema `pattern` for editors. */
const SECRET_REF = new RegExp(`^\\$\\{env:(${VARIABLE})\\}$`);

/** The message for a secret that is not a reference; it never repeats the value. */
export const SECRET_REF_MESSAGE =
  'provider keys must be references like ${env:NAME}; never put the key itself in the file';

/**
 * A Zod schema of a secret reference: a string of the form `${env:NAME}`, branded so that a plain
 * string cannot be passed where a reference is expected; `message` is what a value of another form
 * is told (it never repeats the value).
 */
export function secretRefSchema(message: string) {
  return (
    z
      .string()
      .regex(SECRET_REF, message)
      .brand<'SecretRef'>()
      // patternErrorMessage: shown by yaml-language-server instead of the bare regex.
      .meta({
        description: 'A reference to an environment variable holding the secret: ${env:NAME}',
        patternErrorMessage: message,
      })
  );
}

/** A provider key's reference (see {@link secretRefSchema}). */
export const SecretRefSchema = secretRefSchema(SECRET_REF_MESSAGE);

/** The message for a webhook secret that is not a reference. */
export const WEBHOOK_SECRET_REF_MESSAGE = 'webhook secrets must be references like ${env:NAME}; never put the secret itself in the file';

/** A webhook secret's reference (see {@link secretRefSchema}). */
export const WebhookSecretRefSchema = secretRefSchema(WEBHOOK_SECRET_REF_MESSAGE);

/** A secret reference `${env:NAME}` (validated, branded string). */
export type SecretRef = z.infer<typeof SecretRefSchema>;

/** Whether `text` is a well-formed secret reference `${env:NAME}`. */
export function isSecretRef(text: string): text is SecretRef {
  return SECRET_REF.test(text);
}

/**
 * Checks that `text` is a secret reference and returns it branded.
 *
 * Input: any string. Output: the same string as a {@link SecretRef}.
 * Errors: `invalid_definition` when it is not of the form `${env:NAME}` (the message never
 * contains `text`, which may be a pasted key).
 */
export function parseSecretRef(text: string): SecretRef {
  if (!isSecretRef(text)) throw new ToolkitError('invalid_definition', SECRET_REF_MESSAGE);
  return text;
}

/**
 * The name of the environment variable a reference points at: `${env:ECHO_KEY}` → `ECHO_KEY`.
 * Errors: `invalid_definition` when `ref` is not a reference (the message does not repeat it).
 */
export function secretVariable(ref: string): string {
  const match = SECRET_REF.exec(ref);
  if (!match?.[1]) throw new ToolkitError('invalid_definition', SECRET_REF_MESSAGE);
  return match[1];
}

/**
 * Reads the secret a reference points at.
 *
 * Input: a reference and an environment (default `process.env`). Output: the value. Takes a plain
 * string, checked here, because references reach activities as JSON, where the brand is lost.
 * Errors: `unresolved_secret` when the variable is unset or empty (an empty key is never valid);
 * the message names the variable only. `invalid_definition` when `ref` is not a reference.
 */
export function resolveSecret(ref: SecretRef | string, env: Readonly<Record<string, string | undefined>> = process.env): string {
  const variable = secretVariable(ref);
  const value = env[variable];
  if (value === undefined || value === '') {
    throw new ToolkitError('unresolved_secret', `environment variable ${variable} is not set (referenced as ${ref})`);
  }
  return value;
}

/**
 * The hint of a secret that is safe to show, as the service reports it in `key_hint` (contract
 * §3): its last 4 characters when it has at least 12, else the mask `****`
 * (`api/provider-key-hint.ts`), so that a plan can tell whether the stored key is the same one.
 */
export function secretHint(value: string): string {
  return providerKeyHint(value);
}

/** A command that prints a new webhook secret (`whsec_` and the base64 of 32 random bytes), with Node alone. */
export const WEBHOOK_SECRET_GENERATOR = `node -e "console.log('whsec_' + require('crypto').randomBytes(32).toString('base64'))"`;

/** The hint of a webhook secret missing or malformed in variable `variable`: how to make one. */
function webhookSecretHint(variable: string): string {
  return `put a Standard Webhooks secret in ${variable}; make one with: export ${variable}=$(${WEBHOOK_SECRET_GENERATOR})`;
}

/**
 * Reads a webhook secret from its reference and checks its form (a Standard Webhooks secret),
 * so a malformed one fails before any request with a message naming the variable, never the
 * value, and a hint with a command that makes one. Errors: `unresolved_secret`, `invalid_usage`.
 */
export function resolveWebhookSecret(ref: string, env: Readonly<Record<string, string | undefined>> = process.env): string {
  let secret: string;
  try {
    secret = resolveSecret(ref, env);
  } catch (error) {
    if (error instanceof ToolkitError) throw new ToolkitError(error.code, error.message, { hint: webhookSecretHint(secretVariable(ref)) });
    throw error;
  }
  if (!WebhookSecret.safeParse(secret).success) {
    throw new ToolkitError('invalid_usage', `environment variable ${secretVariable(ref)} does not hold a webhook secret: whsec_ and the base64 of 24 to 64 random bytes`, {
      hint: webhookSecretHint(secretVariable(ref)),
    });
  }
  return secret;
}

// ---- secret templates: a secret written around references (MCP header values) ------------------

/** One reference inside a template; `g` to find them all. */
const TEMPLATE_REFERENCE = new RegExp(`\\$\\{env:(${VARIABLE})\\}`, 'g');
/**
 * A whole template, anchored: text without CR, LF or NUL in which every `${` opens a reference,
 * holding at least one. Its parts cannot overlap (a reference starts with `${`, plain text never
 * does), so matching takes linear time. Also emitted as the JSON Schema `pattern` for editors.
 */
const REFERENCE_SOURCE = `\\$\\{env:${VARIABLE}\\}`;
const PLAIN_SOURCE = '(?:[^$\\r\\n\\u0000]|\\$(?!\\{))';
const SECRET_TEMPLATE = new RegExp(`^${PLAIN_SOURCE}*${REFERENCE_SOURCE}(?:${PLAIN_SOURCE}|${REFERENCE_SOURCE})*$`);
/** The pattern of a secret template as the JSON Schema carries it (the generated reference names it in words). */
export const SECRET_TEMPLATE_PATTERN = SECRET_TEMPLATE.source;

/** The message for a header value that is not a template of references; it never repeats the value. */
export const SECRET_TEMPLATE_MESSAGE =
  'header values are secrets: write each with at least one reference like ${env:NAME} (e.g. "Bearer ${env:TRACKER_TOKEN}"), every ${…} a reference, on one line; never put the secret itself in the file';

/** Longest template, as long as the value it makes may be (`api/agent-tools.ts` `HeaderValue`). */
const MAX_TEMPLATE_LENGTH = 8192;

/**
 * A Zod schema of a secret template: a string holding at least one `${env:NAME}` reference, in
 * which every `${` opens one (`Bearer ${env:TRACKER_TOKEN}`), on one line. Its references are
 * resolved only in activities ({@link resolveSecretTemplate}); the text around them is part of
 * the committed file and is no secret. `message` is what a value of another form is told (never
 * repeating the value).
 */
export function secretTemplateSchema(message: string = SECRET_TEMPLATE_MESSAGE) {
  return z
    .string()
    .max(MAX_TEMPLATE_LENGTH)
    .regex(SECRET_TEMPLATE, message)
    .meta({
      description: 'A secret written with references to environment variables: text with at least one ${env:NAME} (e.g. Bearer ${env:TRACKER_TOKEN})',
      patternErrorMessage: message,
    });
}

/** Whether `text` is a well-formed secret template (see {@link secretTemplateSchema}). */
export function isSecretTemplate(text: string): boolean {
  return text.length <= MAX_TEMPLATE_LENGTH && SECRET_TEMPLATE.test(text);
}

/**
 * The variables a secret template refers to, in order of first use, each once:
 * `Bearer ${env:A}:${env:B}` → `['A', 'B']`. Errors: `invalid_definition` when `template` is not
 * a template (the message does not repeat it).
 */
export function templateVariables(template: string): string[] {
  if (!isSecretTemplate(template)) throw new ToolkitError('invalid_definition', SECRET_TEMPLATE_MESSAGE);
  return [...new Set([...template.matchAll(TEMPLATE_REFERENCE)].map((m) => m[1]!))];
}

/**
 * The secret a template makes: each `${env:NAME}` replaced by the variable's value, the text
 * around it kept. Takes a plain string, checked here (templates reach activities as JSON).
 * Errors: `unresolved_secret` naming the first variable that is unset or empty (the variable
 * only, never a value); `invalid_definition` when `template` is not a template.
 */
export function resolveSecretTemplate(template: string, env: Readonly<Record<string, string | undefined>> = process.env): string {
  for (const variable of templateVariables(template)) resolveSecret(`\${env:${variable}}`, env);
  return template.replace(TEMPLATE_REFERENCE, (_whole, variable: string) => env[variable]!);
}
