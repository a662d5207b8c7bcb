/**
 * Typed replies of pipeline steps: the reply text is parsed as JSON (the whole message, or its
 * first ```json fenced block, as language models write it; for a schema that only allows strings,
 * the bare text counts, as a person types "approve") and checked against the step's JSON Schema
 * (draft 2020-12, https://json-schema.org/draft/2020-12) by ajv's 2020 build with the formats of
 * ajv-formats. A reply that does not fit gets a follow-up saying exactly what is wrong.
 *
 * Pure and deterministic: the pipeline workflow imports it and checks replies inside Temporal's
 * workflow sandbox (ajv compiles a schema to a function with `new Function`, which the sandbox's
 * V8 context allows; it reads no clock and no randomness). `validate` compiles every schema with
 * {@link compileReplySchema} and the same options, so a schema that validates is one the run can
 * compile.
 */
import Ajv2020Module from 'ajv/dist/2020.js';
import type { ErrorObject, ValidateFunction } from 'ajv/dist/2020.js';
import addFormatsModule from 'ajv-formats';
import type { JsonValue } from './expressions.ts';

// CommonJS modules: under Node's ESM loader their default export is the module object.
const Ajv2020 = ((Ajv2020Module as unknown as { default?: unknown }).default ?? Ajv2020Module) as typeof Ajv2020Module.default;
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as typeof addFormatsModule.default;

/** The draft a reply schema is written in; a schema may say so with `$schema` or leave it out. */
export const REPLY_SCHEMA_DRAFT = 'https://json-schema.org/draft/2020-12/schema';

/** Most validator messages quoted in a re-ask or a failure. */
const MAX_PROBLEMS = 10;

let ajv: InstanceType<typeof Ajv2020> | undefined;

/**
 * The one ajv instance: strict about the schema itself (an unknown keyword such as `enums` is an
 * error, not ignored), lenient about combinations ajv's strictest modes warn of; every error of a
 * reply, not the first. Made at the first schema, not at import (ajv compiles its meta-schemas
 * then): a Temporal worker evaluates this module again for every workflow it starts, and most
 * never check a reply. `validate` reads its keywords and formats (`reply-schema-problems.ts`), so
 * that it accepts exactly what the run's compiler does.
 */
export function schemaCompiler(): InstanceType<typeof Ajv2020> {
  if (!ajv) {
    ajv = new Ajv2020({ allErrors: true, strict: true, strictTypes: false, strictTuples: false, strictRequired: false, logger: false });
    addFormats(ajv);
  }
  return ajv;
}

/** Compiled validators by the schema's JSON: a step in a loop or a map checks many replies. */
const validators = new Map<string, ValidateFunction>();
const MAX_VALIDATORS = 200;

/** A reply schema compiled, or why it cannot be. */
export type CompiledSchema = { ok: true; validate: ValidateFunction } | { ok: false; message: string };

/**
 * Compiles a reply schema (cached by its JSON). Output: {@link CompiledSchema}; the message of a
 * schema that does not compile is ajv's (`strict mode: unknown keyword: "enums"`, `schema is
 * invalid: data/type must be …`). Raises nothing.
 */
export function compileReplySchema(schema: Record<string, unknown>): CompiledSchema {
  const key = JSON.stringify(schema);
  const known = validators.get(key);
  if (known) return { ok: true, validate: known };
  if (schema['$schema'] !== undefined && schema['$schema'] !== REPLY_SCHEMA_DRAFT) {
    return { ok: false, message: `$schema must be ${REPLY_SCHEMA_DRAFT} (or left out): replies are checked against JSON Schema 2020-12` };
  }
  let validate: ValidateFunction;
  try {
    validate = schemaCompiler().compile(schema);
  } catch (error) {
    return { ok: false, message: (error as Error).message };
  } finally {
    // ajv keeps every schema it compiled; ours are kept in `validators`, bounded.
    schemaCompiler().removeSchema(schema);
  }
  if (validators.size >= MAX_VALIDATORS) validators.delete(validators.keys().next().value!);
  validators.set(key, validate);
  return { ok: true, validate };
}

/**
 * Whether a schema only allows strings (`type: string`, an `enum` or `const` of strings, or
 * `anyOf`/`oneOf` of such): then a reply's bare text is the value.
 */
export function stringOnly(schema: unknown): boolean {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return false;
  const s = schema as Record<string, unknown>;
  if (s['type'] === 'string') return true;
  if (Array.isArray(s['enum']) && s['enum'].length > 0 && s['enum'].every((v) => typeof v === 'string')) return true;
  if (typeof s['const'] === 'string') return true;
  for (const key of ['anyOf', 'oneOf'] as const) {
    const branches = s[key];
    if (Array.isArray(branches) && branches.length > 0 && branches.every(stringOnly)) return true;
  }
  return Array.isArray(s['allOf']) && s['allOf'].some(stringOnly);
}

/** The strings a schema of strings allows, when it lists them (`enum`, `const`); undefined otherwise. */
function allowedStrings(schema: Record<string, unknown>): string[] | undefined {
  if (Array.isArray(schema['enum']) && schema['enum'].every((v) => typeof v === 'string')) return schema['enum'] as string[];
  if (typeof schema['const'] === 'string') return [schema['const']];
  return undefined;
}

/** The first ```json fenced block of a text, as written (without the fences), or undefined. */
function firstJsonFence(text: string): string | undefined {
  const match = /```json[^\S\r\n]*\r?\n([\s\S]*?)```/i.exec(text);
  return match?.[1];
}

/** A value as a validator message shows it: strings bare, the rest as JSON. */
const shown = (value: unknown) => (typeof value === 'string' ? value : JSON.stringify(value));

/** One validator error as a line: `/category must be one of bug, question, feature`. */
function describeError(error: ErrorObject): string {
  const where = error.instancePath === '' ? 'the reply' : error.instancePath;
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'enum':
      return `${where} must be one of ${(params['allowedValues'] as unknown[]).map(shown).join(', ')}`;
    case 'const':
      return `${where} must be ${shown(params['allowedValue'])}`;
    case 'required':
      return `${where} must have the property ${JSON.stringify(params['missingProperty'])}`;
    case 'additionalProperties':
      return `${where} must not have the property ${JSON.stringify(params['additionalProperty'])}`;
    default:
      return `${where} ${error.message ?? 'does not fit the schema'}`;
  }
}

/** What {@link checkReply} found: the value, or what is wrong with the reply (one line per problem). */
export type ReplyCheck = { ok: true; value: JsonValue } | { ok: false; problems: string[] };

/**
 * Parses a reply and checks it against its schema. The value is the whole text parsed as JSON,
 * else its first ```json block; for a schema of strings only, the text itself (trimmed) unless
 * it is a JSON string. Output: {@link ReplyCheck}; problems are the validator's messages
 * (`/category must be one of bug, question, feature`) or why the text is not JSON. Errors: throws
 * only for a schema that does not compile (`validate` rules that out beforehand).
 */
export function checkReply(text: string, schema: Record<string, unknown>): ReplyCheck {
  const compiled = compileReplySchema(schema);
  if (!compiled.ok) throw new Error(`reply schema does not compile: ${compiled.message}`);
  const trimmed = text.trim();
  let value: JsonValue;
  const parsed = tryJson(trimmed);
  if (stringOnly(schema)) {
    const fenced = firstJsonFence(text);
    const fromFence = fenced === undefined ? undefined : tryJson(fenced.trim());
    if (parsed.ok && typeof parsed.value === 'string') value = parsed.value;
    else if (fromFence?.ok && typeof fromFence.value === 'string') value = fromFence.value;
    else value = trimmed;
  } else if (parsed.ok) {
    value = parsed.value;
  } else {
    const fenced = firstJsonFence(text);
    if (fenced === undefined) return { ok: false, problems: [`the reply is not JSON (${parsed.message}); answer with a JSON value, or put it in a \`\`\`json block`] };
    const fromFence = tryJson(fenced.trim());
    if (!fromFence.ok) return { ok: false, problems: [`the \`\`\`json block of the reply is not JSON (${fromFence.message})`] };
    value = fromFence.value;
  }
  if (compiled.validate(value)) return { ok: true, value };
  const problems = [...new Set((compiled.validate.errors ?? []).map(describeError))];
  return { ok: false, problems: problems.length > MAX_PROBLEMS ? [...problems.slice(0, MAX_PROBLEMS), `… and ${problems.length - MAX_PROBLEMS} more`] : problems };
}

function tryJson(text: string): { ok: true; value: JsonValue } | { ok: false; message: string } {
  try {
    return { ok: true, value: JSON.parse(text) as JsonValue };
  } catch (error) {
    return { ok: false, message: (error as Error).message };
  }
}

/**
 * The follow-up a step writes when a reply does not fit: what is wrong (one line per problem)
 * and how to answer, with the schema. `attempt` is the number of the reply asked for now
 * (2 for the first re-ask), of `attempts` in all.
 */
export function reaskMessage(problems: readonly string[], schema: Record<string, unknown>, attempt: number, attempts: number): string {
  const lines = ['Your reply does not fit what this step expects:', ...problems.map((p) => `- ${p}`)];
  const allowed = allowedStrings(schema);
  if (allowed) lines.push(`Please answer again (reply ${attempt} of ${attempts}) with one of: ${allowed.join(', ')}.`);
  else {
    const kind = stringOnly(schema) ? 'text' : 'JSON (alone, or in a ```json block)';
    lines.push(`Please answer again (reply ${attempt} of ${attempts}) with ${kind} that fits this JSON Schema:`, JSON.stringify(schema));
  }
  return lines.join('\n');
}
