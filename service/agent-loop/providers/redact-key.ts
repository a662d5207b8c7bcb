/**
 * Keeping provider keys out of what the agent loop logs as a failed call's reason.
 */

/**
 * `message` with the key, and every word that may be a piece of it, replaced by `[redacted]`:
 * vendors echo a refused key whole or masked (OpenAI: "Incorrect API key provided:
 * sk-proj-****…abcd"), and even a masked key's visible ends are part of a secret, which no log
 * may hold. A word goes when it holds a mask (three or more `*`, or `...`/`…` between letters or
 * digits) or four letters or digits in a row that occur in the key. Over-redacting a word of
 * prose is the price; the status and the rest of the vendor's explanation stay readable.
 */
export function redactKey(message: string, apiKey: string): string {
  if (apiKey === '') return message;
  const grams = new Set<string>();
  for (let i = 0; i + 4 <= apiKey.length; i++) {
    const gram = apiKey.slice(i, i + 4);
    if (/^[A-Za-z0-9]{4}$/.test(gram)) grams.add(gram);
  }
  const pieceOfKey = (word: string): boolean => {
    if (/\*{3,}|[A-Za-z0-9](?:\.{3}|…)[A-Za-z0-9]/.test(word)) return true;
    for (let i = 0; i + 4 <= word.length; i++) if (grams.has(word.slice(i, i + 4))) return true;
    return false;
  };
  return message
    .split(apiKey)
    .join('[redacted]')
    .replace(/[^\s"'`<>()[\]{},;:]+/g, (word) => (pieceOfKey(word) ? '[redacted]' : word));
}
