import { describe, expect, it } from 'vitest';
import { createStatementNames } from '../../service/storage/prepared-statements.ts';

const sql = 'SELECT * FROM teams WHERE id = $1';

describe('prepared statements', () => {
  it('prepared statements: a text is named from its third run with parameters, and keeps that name', () => {
    const names = createStatementNames();
    expect(names.config(sql, ['a']).name).toBeUndefined();
    expect(names.config(sql, ['b']).name).toBeUndefined();
    const third = names.config(sql, ['c']);
    expect(third).toEqual({ text: sql, values: ['c'], name: expect.stringMatching(/^acs_\d+$/) });
    expect(names.config(sql, ['d']).name).toBe(third.name);
    expect(names.config('SELECT 2 WHERE $1', [1]).name).toBeUndefined();
  });

  it('prepared statements: a statement without parameters is never named (it may hold several statements)', () => {
    const names = createStatementNames({ preparedAfterRuns: 1 });
    for (let i = 0; i < 5; i += 1) expect(names.config('SELECT 1; SELECT 2', undefined).name).toBeUndefined();
  });

  it('prepared statements: past maxNamed texts, new texts stay unnamed and the named keep their names', () => {
    const names = createStatementNames({ preparedAfterRuns: 1, maxNamed: 2 });
    const first = names.config('SELECT $1::int', [1]).name;
    const second = names.config('SELECT $1::text', ['x']).name;
    expect(new Set([first, second]).size).toBe(2);
    expect(names.config('SELECT $1::bigint', [1]).name).toBeUndefined();
    expect(names.config('SELECT $1::int', [2]).name).toBe(first);
  });

  it('prepared statements: a stale plan (0A000) drops the name, and the text is named afresh under another', () => {
    const names = createStatementNames({ preparedAfterRuns: 1 });
    const stale = names.config(sql, ['a']);
    expect(names.retryUnnamed(stale, Object.assign(new Error('cached plan must not change result type'), { code: '0A000' }))).toBe(true);
    const again = names.config(sql, ['a']);
    expect(again.name).toBeDefined();
    expect(again.name).not.toBe(stale.name);
    // The old name's failure, reported late, does not drop the new one.
    expect(names.retryUnnamed(stale, { code: '0A000' })).toBe(false);
    expect(names.config(sql, ['a']).name).toBe(again.name);
  });

  it('prepared statements: a pooler that keeps no prepared statements (26000, 42P05) switches naming off for good', () => {
    for (const code of ['26000', '42P05']) {
      const names = createStatementNames({ preparedAfterRuns: 1 });
      const named = names.config(sql, ['a']);
      expect(names.retryUnnamed(named, { code })).toBe(true);
      expect(names.config(sql, ['a']).name).toBeUndefined();
      expect(names.config('SELECT $1::int', [1]).name).toBeUndefined();
    }
  });

  it('prepared statements: other failures, and failures of unnamed statements, are not run again', () => {
    const names = createStatementNames({ preparedAfterRuns: 1 });
    expect(names.retryUnnamed(names.config(sql, ['a']), { code: '23505' })).toBe(false);
    expect(names.retryUnnamed({ text: 'SELECT 1' }, { code: '26000' })).toBe(false);
    expect(names.retryUnnamed(names.config(sql, ['a']), new Error('connection lost'))).toBe(false);
  });
});
