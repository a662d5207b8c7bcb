/**
 * How the console writes a time (console/src/page.ts): a message of today by its time alone, one
 * of another day with its date, one of another year with the year too — so a person reading a
 * thread that spans days sees when each message was written.
 */
import { describe, expect, it } from 'vitest';
import { fullWhen, when } from '../../console/src/page.ts';

// The reader's present: 22 November 2026, 18:00, in the zone the tests run in.
const now = new Date(2026, 10, 22, 18, 0);
const at = (year: number, month: number, day: number, hour: number, minute: number) => new Date(year, month, day, hour, minute).toISOString();

describe('times in the console', () => {
  it('when: a time of today is the time alone', () => {
    expect(when(at(2026, 10, 22, 9, 15), now, 'en-GB')).toBe('09:15');
    expect(when(at(2026, 10, 22, 0, 5), now, 'en-US')).toBe('12:05 AM');
  });

  it('when: a time of another day carries its date; of another year, its year too', () => {
    expect(when(at(2026, 10, 21, 23, 59), now, 'en-GB')).toBe('21 Nov, 23:59');
    expect(when(at(2026, 0, 3, 9, 15), now, 'en-US')).toBe('Jan 3, 09:15 AM');
    expect(when(at(2025, 10, 22, 9, 15), now, 'en-GB')).toBe('22 Nov 2025, 09:15');
    expect(when(at(2025, 11, 31, 23, 0), now, 'en-US')).toBe('Dec 31, 2025, 11:00 PM');
  });

  it('fullWhen: the whole date and time, for a title', () => {
    expect(fullWhen(at(2025, 10, 22, 9, 15), 'en-US')).toBe('Saturday, November 22, 2025 at 9:15 AM');
  });
});
