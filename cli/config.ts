/**
 * Named contexts, as kubectl has them: a YAML config file holds, per context, which service to
 * talk to and where the keys are — the service's base URL, the *names* of the environment
 * variables that hold the organization key (never a key), and the Temporal profile — and which
 * context is current. `--context NAME` or `TEAMCTL_CONTEXT` picks another one for one command.
 *
 * ```yaml
 * currentContext: dev
 * contexts:
 *   dev:
 *     baseUrl: http://127.0.0.1:8080
 *   prod:
 *     baseUrl: https://acs.example.com
 *     apiKeyEnv: [PROD_ACS_KEY, PROD_ACS_KEY_NEXT]   # a keyring, as --api-key-env
 *     temporalProfile: prod                          # a profile of Temporal's own config file
 * ```
 *
 * The file is `TEAMCTL_CONFIG`, else `$XDG_CONFIG_HOME/teamctl/config.yaml`, else
 * `~/.config/teamctl/config.yaml`. Flags and environment variables win over the context: it only
 * fills in `ACS_BASE_URL`, `TEAMCTL_API_KEY_ENV` and `TEMPORAL_PROFILE` where they are unset, in
 * the environment the command reads (see {@link environmentWithContext}), so every command that
 * reads its connection through `resolveConnection` and `loadTemporalSettings` follows the
 * context without doing anything.
 */
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { homedir } from 'node:os';
import { dirname, join } from 'node:path';
import { Document, isMap, LineCounter, parseDocument } from 'yaml';
import { z } from 'zod';
import { closestMatch } from '../definitions/did-you-mean.ts';
import { formatPath, formatProblem } from '../definitions/problems.ts';
import { schemaProblems } from '../definitions/schema-problems.ts';
import { locate } from '../definitions/yaml-positions.ts';
import { ToolkitError } from '../errors/catalogue.ts';

/** The variable naming the keyring's variables (comma-separated), between a flag and a context. */
export const KEYRING_ENV = 'TEAMCTL_API_KEY_ENV';

const VARIABLE_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** One context: where the service is and where its keys are; every field optional. */
export const ContextSchema = z
  .object({
    baseUrl: z
      .string()
      .refine((url) => URL.canParse(url) && /^https?:$/.test(new URL(url).protocol), { message: 'must be an http(s) URL' })
      .optional(),
    apiKeyEnv: z
      .union([z.string(), z.array(z.string()).min(1)])
      .transform((v) => [v].flat())
      // A variable name, never a key: `acs_org_…` is a valid name, and exactly what must not be here.
      .refine((names) => names.every((n) => VARIABLE_NAME.test(n) && !/^acs_(org|mcp)_/i.test(n)), {
        message: 'must name environment variables (letters, digits, _), never hold a key: the key stays in the variable',
      })
      .optional(),
    temporalProfile: z.string().min(1).optional(),
  })
  .strict();
export type Context = z.infer<typeof ContextSchema>;

/** The config file: the contexts by name and the current one. */
export const ConfigSchema = z
  .object({
    currentContext: z.string().min(1).optional(),
    contexts: z.record(z.string().regex(/^[A-Za-z0-9._-]{1,100}$/, 'a context name is letters, digits, . _ -'), ContextSchema).default({}),
  })
  .strict();
export type Config = z.infer<typeof ConfigSchema>;

/** The path of the config file for `env` (see the module comment). */
export function configPath(env: NodeJS.ProcessEnv): string {
  if (env.TEAMCTL_CONFIG) return env.TEAMCTL_CONFIG;
  const base = env.XDG_CONFIG_HOME || join(env.HOME || homedir(), '.config');
  return join(base, 'teamctl', 'config.yaml');
}

/** A config file as read: the validated config, and the YAML document (its comments kept for edits). */
export interface LoadedConfig {
  path: string;
  /** False when the file does not exist (the config is then empty). */
  exists: boolean;
  config: Config;
  document: Document;
}

/**
 * Reads and validates the config file at `path`. A missing file is an empty config.
 * Errors: `invalid_config` naming the file, with `FILE:LINE:COL: path: message` lines for every
 * problem (YAML syntax, unknown keys with did-you-mean, bad values).
 */
export async function loadConfig(path: string): Promise<LoadedConfig> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { path, exists: false, config: { contexts: {} }, document: new Document({}) };
    throw new ToolkitError('invalid_config', `${path}: cannot read the config file (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
  const lineCounter = new LineCounter();
  const document = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: true });
  if (document.errors.length > 0) {
    const lines = document.errors.map((e) => {
      const { line, col } = lineCounter.linePos(e.pos[0]);
      return formatProblem({ file: path, line, column: col, path: '', message: e.message.split('\n')[0]! });
    });
    throw new ToolkitError('invalid_config', `${path}: not a valid config file:\n${lines.join('\n')}`);
  }
  const data: unknown = document.toJS() ?? {};
  const parsed = ConfigSchema.safeParse(data);
  if (!parsed.success) {
    const lines = schemaProblems(parsed.error.issues, ConfigSchema, data).map((p) => {
      // Someone tried to store a key: say where keys go instead of listing the accepted fields.
      const message = p.target === 'key' && /^(api_?key|key|token|secret)$/i.test(String(p.path.at(-1))) ? `${String(p.path.at(-1))}: keys are never stored in the config file; name the variable that holds the key with apiKeyEnv` : p.message;
      return formatProblem({ file: path, ...locate(document, lineCounter, p.path, p.target), path: formatPath(p.path), message });
    });
    throw new ToolkitError('invalid_config', `${path}: not a valid config file:\n${lines.join('\n')}`);
  }
  // An empty file: edits start from an empty mapping.
  if (!isMap(document.contents)) return { path, exists: true, config: parsed.data, document: new Document({}) };
  return { path, exists: true, config: parsed.data, document };
}

/**
 * Writes a config document back atomically (a temporary file renamed over the old one), creating
 * its directory; comments and key order of the file are kept. Errors: `invalid_config` when it
 * cannot be written.
 */
export async function saveConfig(loaded: LoadedConfig): Promise<void> {
  const temporary = `${loaded.path}.${process.pid}.tmp`;
  try {
    await mkdir(dirname(loaded.path), { recursive: true });
    await writeFile(temporary, String(loaded.document));
    await rename(temporary, loaded.path);
  } catch (error) {
    await rm(temporary, { force: true });
    throw new ToolkitError('invalid_config', `${loaded.path}: cannot write the config file (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
}

/**
 * The context named `name` of a loaded config. Errors: `context_not_found` with did-you-mean,
 * naming the file (or saying it does not exist).
 */
export function contextNamed(loaded: LoadedConfig, name: string): Context {
  const context = loaded.config.contexts[name];
  if (context) return context;
  const names = Object.keys(loaded.config.contexts);
  if (!loaded.exists) throw new ToolkitError('context_not_found', `no context named ${JSON.stringify(name)}: there is no config file at ${loaded.path}`);
  const match = closestMatch(name, names);
  const detail = match ? `did you mean ${JSON.stringify(match)}?` : names.length ? `its contexts: ${names.join(', ')}` : 'it has none';
  throw new ToolkitError('context_not_found', `no context named ${JSON.stringify(name)} in ${loaded.path} (${detail})`);
}

/** Which context a command uses and why. */
export interface SelectedContext {
  name: string;
  context: Context;
}

/**
 * Picks the context for a command: `flag` (`--context`), else `TEAMCTL_CONTEXT`, else the file's
 * `currentContext`; none of them set: no context. Errors: `context_not_found`, `invalid_config`.
 */
export async function selectContext(env: NodeJS.ProcessEnv, flag: string | undefined): Promise<SelectedContext | undefined> {
  const loaded = await loadConfig(configPath(env));
  const name = flag ?? (env.TEAMCTL_CONTEXT || undefined) ?? loaded.config.currentContext;
  if (name === undefined) return undefined;
  return { name, context: contextNamed(loaded, name) };
}

/**
 * The environment a command reads, with a context's settings filled in where the environment
 * has none: `ACS_BASE_URL` (its `baseUrl`), `TEAMCTL_API_KEY_ENV` (its `apiKeyEnv`, comma-joined)
 * and `TEMPORAL_PROFILE` (its `temporalProfile`). Variables already set are kept — the
 * environment wins over the context, and flags win over both. Output: a new object.
 */
export function environmentWithContext(env: NodeJS.ProcessEnv, context: Context): NodeJS.ProcessEnv {
  return { ...env, ...environmentFilled(env, context) };
}

/** The context's settings that `env` lacks, as variables. */
function environmentFilled(env: NodeJS.ProcessEnv, context: Context): NodeJS.ProcessEnv {
  const filled: NodeJS.ProcessEnv = {};
  if (!env.ACS_BASE_URL && context.baseUrl) filled.ACS_BASE_URL = context.baseUrl;
  if (!env[KEYRING_ENV] && context.apiKeyEnv) filled[KEYRING_ENV] = context.apiKeyEnv.join(',');
  if (!env.TEMPORAL_PROFILE && context.temporalProfile) filled.TEMPORAL_PROFILE = context.temporalProfile;
  return filled;
}

/** The context's key each variable it fills in comes from. */
const CONTEXT_KEYS: Record<string, string> = { ACS_BASE_URL: 'baseUrl', [KEYRING_ENV]: 'apiKeyEnv', TEMPORAL_PROFILE: 'temporalProfile' };

/** Which variables of an environment a context filled in, and which context: messages name where a setting came from. */
const filledByContext = new WeakMap<NodeJS.ProcessEnv, { context: string; variables: ReadonlySet<string> }>();

/**
 * Fills the selected context's settings into `env` itself where it has none (as
 * {@link environmentWithContext}) and remembers which variables came from the context, so that a
 * message about a setting names where it came from ({@link settingOrigin}). Input: the command's
 * own environment object and the selected context. Raises nothing.
 */
export function fillContext(env: NodeJS.ProcessEnv, selected: SelectedContext): void {
  const filled = environmentFilled(env, selected.context);
  Object.assign(env, filled);
  filledByContext.set(env, { context: selected.name, variables: new Set(Object.keys(filled)) });
}

/**
 * Where the value of `variable` in `env` came from, as a message names it: the variable itself
 * (`ACS_BASE_URL`), or the context that filled it in (`context "prod"'s baseUrl`).
 */
export function settingOrigin(env: NodeJS.ProcessEnv, variable: string): string {
  const fill = filledByContext.get(env);
  return fill?.variables.has(variable) ? `context "${fill.context}"'s ${CONTEXT_KEYS[variable] ?? variable}` : variable;
}
