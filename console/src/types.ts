/** The wire shapes the console reads: the service's own schemas, as types only (nothing of them is bundled). */
import type { z } from 'zod';
import type { Me as MeSchema, MeEdge as MeEdgeSchema, MeThread as MeThreadSchema, MeThreadPage as MeThreadPageSchema } from '../../api/session-schemas.ts';
import type { AccessRequest as AccessRequestSchema, CreatedMcpKey as CreatedMcpKeySchema, McpKey as McpKeySchema, Message as MessageSchema, TeamGraph as TeamGraphSchema } from '../../api/schemas.ts';

export type Me = z.output<typeof MeSchema>;
export type MeEdge = z.output<typeof MeEdgeSchema>;
export type MeThread = z.output<typeof MeThreadSchema>;
export type MeThreadPage = z.output<typeof MeThreadPageSchema>;
export type Message = z.output<typeof MessageSchema>;
export type TeamGraph = z.output<typeof TeamGraphSchema>;
export type McpKey = z.output<typeof McpKeySchema>;
export type CreatedMcpKey = z.output<typeof CreatedMcpKeySchema>;
export type AccessRequest = z.output<typeof AccessRequestSchema>;
