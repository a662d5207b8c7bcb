/**
 * The rules of provider keys that the service and the toolkit share (contract §3): how long a key
 * must be, and how much of it a `key_hint` may show.
 */

/** The fewest characters a provider key may have, except for `echo` (any non-empty string). */
export const minProviderKeyLength = 8;

/** The fewest characters a key needs before its hint shows any of them. */
export const minHintedKeyLength = 12;

/** How many of the last characters a hint shows. */
export const hintLength = 4;

/**
 * The hint of a key too short to show any of its characters: a fixed mask of the same length as a
 * real hint, so that lists stay aligned and nothing of the key is told.
 */
export const maskedKeyHint = '****';

/**
 * The `key_hint` of a provider key: its last 4 characters when it has at least 12, else
 * {@link maskedKeyHint}. A hint of a short key would tell too much of it (the last 4 of an
 * 8-character key are half of it; of a 4-character key, all of it). Characters are Unicode code
 * points, so a hint never splits one. Input: the key as stored (trimmed). Raises nothing.
 */
export function providerKeyHint(key: string): string {
  const characters = [...key];
  return characters.length >= minHintedKeyLength ? characters.slice(-hintLength).join('') : maskedKeyHint;
}

/** The length of a key in Unicode code points, the unit of {@link minProviderKeyLength}. */
export function providerKeyLength(key: string): number {
  return [...key].length;
}
