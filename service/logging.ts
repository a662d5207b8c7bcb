/**
 * How acs-server logs: one line per answered request and the agent loop's warnings, readable
 * by a person on a terminal (pino-pretty: `12:00:01 INFO GET /api/v1/organizations 200 2.1 ms`)
 * and one JSON object a line for machines (pino's own format). Keys never appear: the request
 * line carries method, URL, status and time only, the URL with its secrets redacted
 * ({@link loggedUrl}), and the logger redacts key headers whatever else a deployment logs
 * (`service/http/app.ts`).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Log formats of `acs-server start --log-format`. */
export const LogFormats = { pretty: 'pretty', json: 'json' } as const;
export type LogFormat = (typeof LogFormats)[keyof typeof LogFormats];

/** Log levels of `--log-level`, most verbose first (pino's; `silent` logs nothing). */
export const LogLevels = ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'] as const;
export type LogLevel = (typeof LogLevels)[number];

/** Settings of the server's log. */
export interface LogSettings {
  format: LogFormat;
  level: LogLevel;
  /** Pretty format only: colour the level and status (a terminal without `NO_COLOR`). */
  color?: boolean;
  /** A file the log is appended to (its directory made when missing); absent: stdout. */
  file?: string;
}

/** The name of the log file a server in the background of a terminal writes (see {@link defaultLogFile}). */
export const LOG_FILE_NAME = 'acs-server.log';

/**
 * Whether this process runs in the background of the terminal it writes to (`acs-server start … &`
 * in an interactive shell, through `npx` too): stdout is a terminal whose foreground process group
 * is not this process's. Read from `/proc/self/stat` (its `pgrp` and `tpgid` fields, Linux);
 * where that cannot be read, false: the log stays on the terminal as before. Input: whether stdout
 * is a terminal.
 */
export function inBackgroundOfTerminal(stdoutIsTTY: boolean): boolean {
  if (!stdoutIsTTY) return false;
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    // `pid (comm) state ppid pgrp session tty_nr tpgid …`; comm may hold spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const pgrp = Number(fields[2]);
    const tpgid = Number(fields[5]);
    return tpgid > 0 && pgrp !== tpgid;
  } catch {
    return false;
  }
}

/**
 * Where a server started in the background of a terminal writes its log unless `--log-file` says:
 * beside its data, `DATA_DIR/acs-server.log`, for the embedded database on disk; `acs-server.log`
 * in the current directory for one in memory or on PostgreSQL (which keep nothing on this disk).
 */
export function defaultLogFile(storage: { dataDir: string; inMemory: boolean; databaseUrl?: string | undefined }): string {
  return storage.inMemory || storage.databaseUrl ? LOG_FILE_NAME : join(storage.dataDir, LOG_FILE_NAME);
}

/**
 * The default format for a destination: pretty for a person at a terminal, JSON otherwise
 * (a file, a pipe, a log collector). Input: whether stdout is a terminal.
 */
export function defaultLogFormat(stdoutIsTTY: boolean): LogFormat {
  return stdoutIsTTY ? LogFormats.pretty : LogFormats.json;
}

/**
 * The logger options for `startServer({ logger })` (pino options, with a stream for the pretty
 * format or a file): on stdout, or appended to `settings.file`. pino-pretty is loaded only for
 * the pretty format: a server logging JSON (a service, a container) does not load it. The pretty
 * format leaves out Fastify's own `Server listening at …` line (the program prints one of its own).
 * Input: {@link LogSettings}. Output: options Fastify builds its pino logger from. Raises nothing.
 */
export async function loggerOptions(settings: LogSettings): Promise<Record<string, unknown>> {
  const file = settings.file;
  if (settings.format === LogFormats.json) {
    if (!file) return { level: settings.level };
    const { default: pino } = await import('pino');
    return { level: settings.level, stream: pino.destination({ dest: file, append: true, mkdir: true, sync: true }) };
  }
  const { default: pinoPretty } = await import('pino-pretty');
  const pretty = pinoPretty({
    ...(file ? { destination: file, append: true, mkdir: true } : {}),
    colorize: (settings.color ?? false) && !file,
    // Synchronous: a line is on the terminal before the process may exit after it.
    sync: true,
    translateTime: 'SYS:HH:MM:ss',
    // The request line's fields are already in its message; the rest would repeat on every line.
    ignore: 'pid,hostname,reqId,method,url,status,ms',
    singleLine: true,
  });
  // The program prints its own `acs-server listening on URL` line; Fastify's would say it twice.
  // (JSON logs keep it: a log collector has no other.)
  const stream = { write: (line: string) => (line.includes('"msg":"Server listening at ') ? true : pretty.write(line)) };
  return { level: settings.level, stream };
}

/** Query parameters whose values are secrets: a sign-in link's `token`, an OpenID Connect callback's `code` and `state`. */
const secretQueryNames = new Set(['token', 'code', 'state']);

/** Secrets of the service that a mistyped URL may carry outside any query (`/sign-in/link/acs_signin_…`). */
const secretPattern = /acs_(?:signin|session|org|mcp)_[0-9A-Za-z]+/g;

/**
 * A query parameter's name as a query parser may read it: `+` as a space, percent-escapes decoded
 * (each valid one, so a malformed escape elsewhere does not stop the rest; repeated, so a name
 * encoded twice counts too), surrounding white space dropped, in lower case. Over-matching only
 * redacts more.
 */
function decodedName(raw: string): string {
  let name = raw;
  for (let round = 0; round < 4; round += 1) {
    const next = name.replace(/\+/g, ' ').replace(/%([0-9A-Fa-f]{2})/g, (_escape, hex: string) => String.fromCharCode(Number.parseInt(hex, 16)));
    if (next === name) break;
    name = next;
  }
  return name.trim().toLowerCase();
}

/**
 * `url` as a log line may show it (contract §14): the value of every query parameter whose name,
 * decoded as the router decodes it — percent-encoded (`%74oken`), in any case, with `+` for a
 * space, repeated — is `token`, `code` or `state`, replaced by `[redacted]` (parameters split at
 * `&` and at `;`, which some parsers also take), and any service secret (`acs_signin_…`,
 * `acs_session_…`, `acs_org_…`, `acs_mcp_…`) left anywhere else in it. Everything else is kept
 * as it was written. Raises nothing.
 */
export function loggedUrl(url: string): string {
  const start = url.indexOf('?');
  let logged = url;
  if (start !== -1) {
    const parts = url.slice(start + 1).split(/([&;])/);
    const query = parts.map((part, index) => {
      // Odd indexes are the separators themselves.
      if (index % 2 === 1) return part;
      const equals = part.indexOf('=');
      const name = equals === -1 ? part : part.slice(0, equals);
      return secretQueryNames.has(decodedName(name)) ? `${name}=[redacted]` : part;
    });
    logged = `${url.slice(0, start)}?${query.join('')}`;
  }
  return logged.replace(secretPattern, '[redacted]');
}
