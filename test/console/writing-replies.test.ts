/**
 * How the thread page keeps a reply being written (console/src/thread-stream.ts): the text of its
 * deltas joined, each delta once, started afresh by a step or a restart, and marked done by its
 * message, whose text then takes its place. The browser suite (console.long.test.ts) watches it
 * grow and stop against a real server; here the rules, item by item.
 */
import { describe, expect, it } from 'vitest';
import { applyWritingItem, stillWriting, type WritingItem, type WritingReplies } from '../../console/src/writing-replies.ts';

const thread = '00000000-0000-4000-8000-000000000001';
const reply = '00000000-0000-4000-8000-000000000002';
const agent = '00000000-0000-4000-8000-000000000003';
const delta = (index: number, text: string): WritingItem => ({ type: 'message.delta', data: { thread_id: thread, message_id: reply, sender_id: agent, index, text } });
const apply = (items: WritingItem[]): WritingReplies => items.reduce<WritingReplies>(applyWritingItem, new Map());

describe('the replies being written, as the thread page keeps them', () => {
  it('applyWritingItem: deltas join in order into the reply\'s text, and one seen already changes nothing', () => {
    const replies = apply([delta(0, 'echo: '), delta(1, 'one '), delta(1, 'one '), delta(0, 'echo: '), delta(2, 'two')]);
    expect([...replies.values()]).toEqual([{ messageId: reply, senderId: agent, text: 'echo: one two', next: 3, done: false }]);
  });

  it('applyWritingItem: a turn step or a restart starts the text afresh, the reply still being written', () => {
    const stepped = apply([delta(0, 'Let me look. '), { type: 'turn.step', data: { thread_id: thread, message_id: reply, sender_id: agent, step: 1, tool_call_ids: [] } }]);
    expect(stepped.get(reply)).toMatchObject({ text: '', done: false, senderId: agent });
    const restarted = apply([delta(0, 'half a'), { type: 'turn.restarted', data: { thread_id: thread, message_id: reply, sender_id: agent } }, delta(1, 'whole')]);
    expect(restarted.get(reply)).toMatchObject({ text: 'whole', done: false });
  });

  it('applyWritingItem: a step before any delta shows a reply being written, by the agent whose turn it is', () => {
    const replies = apply([{ type: 'turn.step', data: { thread_id: thread, message_id: reply, sender_id: agent, step: 1, tool_call_ids: [] } }]);
    expect(replies.get(reply)).toEqual({ messageId: reply, senderId: agent, text: '', next: 0, done: false });
  });

  it('applyWritingItem: its message marks it done, and nothing after that changes it; another message changes nothing', () => {
    const before = apply([delta(0, 'all of it')]);
    expect(applyWritingItem(before, { type: 'message.created', data: { message_id: 'another' } })).toBe(before);
    const done = applyWritingItem(before, { type: 'message.created', data: { message_id: reply } });
    expect(done.get(reply)).toMatchObject({ text: 'all of it', done: true });
    expect(applyWritingItem(done, delta(1, ' more'))).toBe(done);
  });

  it('stillWriting: a reply whose message the page shows is no longer shown growing', () => {
    const replies = apply([delta(0, 'text')]);
    expect(stillWriting(replies, new Set())).toHaveLength(1);
    expect(stillWriting(replies, new Set([reply]))).toEqual([]);
  });
});
