/**
 * What one turn of a provider agent may call (contract §11), under the names its model sees: the
 * team tools (tools/team-tools.ts, but `wait_for_messages`, which would hold the turn), the task
 * tools (tools/task-tools.ts: a task asked of the agent, or that it asked for) and `ask`
 * when `tools.team` is true, and the allowed tools of each remote MCP server as `SERVER__TOOL`
 * (model APIs take `^[A-Za-z0-9_-]{1,64}$`; server names have no `_`, so the first `__` splits).
 * Arguments of team tools are checked against their Zod schemas here, so a model's mistake is a
 * tool error it can read, not a failed turn.
 */
import { z } from 'zod';
import type { AgentTools } from '../../api/agent-tools.ts';
import type { UrlPolicy } from '../outbound/url-guard.ts';
import { AskArgs, askDescription } from './ask.ts';
import { connectRemoteServer, type RemoteServer } from './remote-mcp.ts';
import { taskTools } from './task-tools.ts';
import { teamTools, type TeamTool } from './team-tools.ts';

/** Kinds of tool a turn calls: team tools run at once, `ask` waits for an answer, remote ones go to a server. */
export const TurnToolKinds = { team: 'team', ask: 'ask', remote: 'remote' } as const;
export type TurnToolKind = (typeof TurnToolKinds)[keyof typeof TurnToolKinds];

/** A tool of a turn. `tool` and `server` are what records show; `modelName` is what the model calls it. */
export interface TurnTool {
  modelName: string;
  kind: TurnToolKind;
  tool: string;
  server: string | null;
  description: string;
  inputSchema: Record<string, unknown>;
  /** For team tools and ask: the schema the arguments must fit. */
  schema?: z.ZodType;
  team?: TeamTool;
  remote?: RemoteServer;
}

/** The tools of one turn, and the remote connections to close after it. */
export interface Toolbox {
  tools: TurnTool[];
  /** The tool a model's name means, if any. */
  find(modelName: string): TurnTool | undefined;
  /** What the model is offered: each tool's name, description and input's JSON Schema. */
  offered(): Array<{ name: string; description: string; inputSchema: Record<string, unknown> }>;
  /** Servers that could not be reached, by name, with why (their tools are not offered this time). */
  unreachable: Map<string, string>;
  close(): Promise<void>;
}

/** A JSON Schema of a Zod schema's input, as model APIs take it (no `$schema`). */
function inputJsonSchema(schema: z.ZodType): Record<string, unknown> {
  const { $schema: _draft, ...json } = z.toJSONSchema(schema, { io: 'input', target: 'draft-7', unrepresentable: 'any' }) as Record<string, unknown>;
  return json;
}

/** `SERVER__TOOL` within 64 characters of `[A-Za-z0-9_-]`, unique among `taken`. */
function modelNameOf(server: string, tool: string, taken: Set<string>): string {
  const base = `${server}__${tool.replace(/[^A-Za-z0-9_-]/g, '_')}`.slice(0, 64);
  let name = base;
  for (let n = 2; taken.has(name); n += 1) name = `${base.slice(0, 60)}_${n}`;
  taken.add(name);
  return name;
}

/** The team tools a turn offers (every §7 tool but the wait, and the task tools of §12), with `ask`. Pure; the same for every turn. */
function teamToolsOfTurn(): TurnTool[] {
  const team: TurnTool[] = [...teamTools, ...taskTools]
    .filter((t) => !t.holdsWait)
    .map((t) => ({ modelName: t.name, kind: 'team', tool: t.name, server: null, description: t.description, inputSchema: inputJsonSchema(t.input), schema: t.input, team: t }));
  team.push({ modelName: 'ask', kind: 'ask', tool: 'ask', server: null, description: askDescription, inputSchema: inputJsonSchema(AskArgs), schema: AskArgs });
  return team;
}

let teamCache: TurnTool[] | undefined;

/**
 * Opens the tools of an agent's turn: the team tools when `tools.team`, and each remote server's
 * allowed tools (connecting to it; one that cannot be reached is left out and named in
 * `unreachable`, so the turn goes on with the rest). Input: the agent's `tools`, its servers'
 * header values, the URL policy, the timeout for connecting, and `signal`. Output: the
 * {@link Toolbox}; close it when the turn stops running.
 */
export async function openToolbox(
  tools: AgentTools,
  headers: Record<string, Record<string, string>>,
  policy: UrlPolicy,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<Toolbox> {
  const list: TurnTool[] = tools.team ? [...(teamCache ??= teamToolsOfTurn())] : [];
  const taken = new Set(list.map((t) => t.modelName));
  const unreachable = new Map<string, string>();
  const servers = await Promise.all(
    tools.mcp.map(async (server) => {
      try {
        return await connectRemoteServer({ name: server.name, url: server.url, headers: headers[server.name] ?? {}, allow: server.allow }, policy, timeoutMs, signal);
      } catch (error) {
        unreachable.set(server.name, (error as Error).message);
        return undefined;
      }
    }),
  );
  for (const remote of servers) {
    if (!remote) continue;
    for (const t of remote.tools) {
      list.push({
        modelName: modelNameOf(remote.name, t.name, taken),
        kind: 'remote',
        tool: t.name,
        server: remote.name,
        description: `${t.description}`.slice(0, 4000) || `${t.name} of ${remote.name}`,
        inputSchema: t.inputSchema,
        remote,
      });
    }
  }
  const byName = new Map(list.map((t) => [t.modelName, t]));
  return {
    tools: list,
    find: (name) => byName.get(name),
    offered: () => list.map((t) => ({ name: t.modelName, description: t.description, inputSchema: t.inputSchema })),
    unreachable,
    async close() {
      await Promise.all(servers.map((s) => s?.close()));
    },
  };
}
