/**
 * Zod schemas of a thread's stream (replies as they are written): the query that starts or
 * resumes it, the items it carries besides whole messages, the SSE frame of each, and the answer of
 * a stop. The items of a stream are not events of the organization's log: they live ten minutes,
 * for readers that resume.
 */
import { z } from 'zod';
import { Id } from './primitives.ts';

/** A position in a thread's stream, as its SSE ids write it: `12` (message 12), `12.3` (the third live item after it). */
export const StreamPositionText = z
  .string()
  .regex(/^\d{1,10}(?:\.\d{1,10})?$/, 'must be a position of the thread\'s stream: a message seq (12) or a live item after it (12.3)')
  .meta({ description: 'A position of the thread\'s stream: a message seq (`12`) or a live item after it (`12.3`).' });

/** `GET /threads/{thread_id}/stream`: where to start (the `Last-Event-ID` header wins). */
export const ThreadStreamQuery = z.strictObject({
  after: StreamPositionText.optional().meta({
    description:
      'Start after this position (the `Last-Event-ID` header wins). Neither: after the thread\'s last message, so a reply being written is seen from its first delta. `0`: the whole thread.',
  }),
});

/** `message.delta`: a piece of a reply as it is written; the deltas of a reply joined are its text. */
export const MessageDelta = z
  .object({
    thread_id: Id,
    message_id: Id.meta({ description: 'The reply\'s id, fixed when its turn starts: the `message.created` that ends it has it.' }),
    sender_id: Id.meta({ description: 'The agent writing it.' }),
    index: z.number().int().min(0).meta({ description: '0, 1, … per reply, also across a restart.' }),
    text: z.string().meta({ description: 'The text written since the previous delta of the reply.' }),
  })
  .meta({ id: 'MessageDelta' });
export type MessageDelta = z.infer<typeof MessageDelta>;

/** `turn.step`: a step of a turn asked for tools; the text streamed in it was not the reply (start the reply's text afresh). */
export const TurnStep = z
  .object({ thread_id: Id, message_id: Id, sender_id: Id.meta({ description: 'The agent whose turn it is.' }), step: z.number().int().min(1), tool_call_ids: z.array(Id) })
  .meta({ id: 'TurnStep' });

/** `turn.restarted`: the reply is written again from its start (its process stopped, or the model failed half-way): drop its text so far. */
export const TurnRestarted = z.object({ thread_id: Id, message_id: Id, sender_id: Id.meta({ description: 'The agent writing the reply.' }) }).meta({ id: 'TurnRestarted' });

/** The SSE event types of a thread's stream. */
export const ThreadStreamEventTypes = [
  'message.created',
  'message.delta',
  'turn.step',
  'turn.restarted',
  'tool_call.started',
  'tool_call.finished',
] as const;

/** One frame of a thread's stream, as the OpenAPI document describes it. */
export const ThreadStreamFrame = z
  .object({
    id: StreamPositionText,
    event: z.enum(ThreadStreamEventTypes),
    data: z.string().meta({
      contentMediaType: 'application/json',
      description: 'The item as JSON: a Message (`message.created`), a MessageDelta, a TurnStep, a TurnRestarted, or a ToolCall (`tool_call.*`).',
    }),
  })
  .meta({ id: 'ThreadStreamFrame' });

/** `POST /threads/{thread_id}/stop`: how many agents were asked to stop (0: nothing was being written). */
export const StopResult = z.object({ thread_id: Id, stopping: z.number().int().min(0) }).meta({ id: 'StopResult' });
