/**
 * How acs-server logs: one line per answered request and the agent loop's warnings, readable
 * by a person on a terminal (pino-pretty: `12:00:01 INFO GET /api/v1/organizations 200 2.1 ms`)
 * and one JSON object a line for machines (pino's own format). Keys never appear: the request
 * line carries method, path, status and time only, and the logger redacts key headers whatever
 * else a deployment logs (`service/http/app.ts`).
 */
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
}

/**
 * The default format for a destination: pretty for a person at a terminal, JSON otherwise
 * (a file, a pipe, a log collector). Input: whether stdout is a terminal.
 */
export function defaultLogFormat(stdoutIsTTY: boolean): LogFormat {
  return stdoutIsTTY ? LogFormats.pretty : LogFormats.json;
}

/**
 * The logger options for `startServer({ logger })` (pino options, with a pretty stream on stdout
 * for the pretty format). pino-pretty is loaded only for the pretty format: a server logging JSON
 * (a service, a container) does not load it. Input: {@link LogSettings}. Output:
 * options Fastify builds its pino logger from. Raises nothing.
 */
export async function loggerOptions(settings: LogSettings): Promise<Record<string, unknown>> {
  if (settings.format === LogFormats.json) return { level: settings.level };
  const { default: pinoPretty } = await import('pino-pretty');
  const stream = pinoPretty({
    colorize: settings.color ?? false,
    // Synchronous: a line is on the terminal before the process may exit after it.
    sync: true,
    translateTime: 'SYS:HH:MM:ss',
    // The request line's fields are already in its message; the rest would repeat on every line.
    ignore: 'pid,hostname,reqId,method,url,status,ms',
    singleLine: true,
  });
  return { level: settings.level, stream };
}
