/** The wire shapes the console reads: the service's own schemas, as types only (nothing of them is bundled). */
import type { z } from 'zod';
import type { Me as MeSchema, MeEdge as MeEdgeSchema, MeTeamGraph as MeTeamGraphSchema, MeThread as MeThreadSchema, MeThreadPage as MeThreadPageSchema } from '../../api/session-schemas.ts';
import type { ToolCall as ToolCallSchema, ToolCallList as ToolCallListSchema } from '../../api/agent-tools.ts';
import type { MessageDelta as MessageDeltaSchema, StopResult as StopResultSchema, TurnRestarted as TurnRestartedSchema, TurnStep as TurnStepSchema } from '../../api/thread-stream.ts';
import type { AccessRequest as AccessRequestSchema, CreatedMcpKey as CreatedMcpKeySchema, McpKey as McpKeySchema, Message as MessageSchema } from '../../api/schemas.ts';

export type Me = z.output<typeof MeSchema>;
export type MeEdge = z.output<typeof MeEdgeSchema>;
export type MeThread = z.output<typeof MeThreadSchema>;
export type MeThreadPage = z.output<typeof MeThreadPageSchema>;
export type Message = z.output<typeof MessageSchema>;
/** A team as a member sees it (`GET /api/v1/me/teams/{id}`): no instructions, tools or others' emails. */
export type TeamGraph = z.output<typeof MeTeamGraphSchema>;
export type McpKey = z.output<typeof McpKeySchema>;
export type CreatedMcpKey = z.output<typeof CreatedMcpKeySchema>;
export type AccessRequest = z.output<typeof AccessRequestSchema>;
export type ToolCall = z.output<typeof ToolCallSchema>;
export type ToolCallList = z.output<typeof ToolCallListSchema>;
/** A piece of a reply being written (`message.delta` of a thread's stream). */
export type MessageDelta = z.output<typeof MessageDeltaSchema>;
/** A step of a turn that called tools (`turn.step`): the text streamed in it was not the reply. */
export type TurnStep = z.output<typeof TurnStepSchema>;
/** A reply written again from its start (`turn.restarted`). */
export type TurnRestarted = z.output<typeof TurnRestartedSchema>;
/** What a stop answers: how many agents were asked to stop. */
export type StopResult = z.output<typeof StopResultSchema>;
