/**
 * "Did you mean" hints for misspelt keys and values.
 */
import { distance } from 'fastest-levenshtein';

/**
 * The candidate closest to `word`, if it is close enough to be a likely typo: an edit distance
 * (case-insensitive) of at most a third of the word's length, but at least 2 from 4 characters
 * on, since swapping two letters (`nmae`) costs 2, and 1 below, so that "bob" does not suggest "b". Input: the word and the accepted words. Output: the best one or undefined.
 */
export function closestMatch(word: string, candidates: readonly string[]): string | undefined {
  const lower = word.toLowerCase();
  let best: string | undefined;
  let bestDistance = (word.length <= 3 ? 1 : Math.max(2, Math.floor(word.length / 3))) + 1;
  for (const candidate of candidates) {
    // The distance is at least the difference in length: skip what cannot win (a huge word costs nothing).
    if (Math.abs(candidate.length - word.length) >= bestDistance) continue;
    const d = distance(lower, candidate.toLowerCase());
    if (d < bestDistance) {
      best = candidate;
      bestDistance = d;
    }
  }
  return best;
}

/**
 * A hint to append to a message: ` (did you mean "x"?)` for a close match, otherwise
 * ` (expected one of a, b, c)` so that the reader still sees what is allowed; empty when there
 * are no candidates.
 */
export function suggestion(word: string, candidates: readonly string[]): string {
  const match = closestMatch(word, candidates);
  if (match !== undefined) return ` (did you mean ${JSON.stringify(match)}?)`;
  return candidates.length > 0 ? ` (expected one of ${candidates.join(', ')})` : '';
}
