/**
 * Sizes of payloads as Temporal counts them: its limits (2 MB a payload, a warning at 512 KiB) are
 * on the encoded bytes, and the JSON data converter writes UTF-8, where a character outside ASCII
 * takes two to four bytes. A string's `length` counts UTF-16 units instead, so a budget kept in
 * `length` holds three times over for text in Chinese or Japanese. Pure and deterministic: workflow
 * code (the sandbox) and activities both use it.
 */

/**
 * Temporal's limit for one payload, in bytes: the server's `limit.blobSize.error` (default 2 MiB);
 * past it the server refuses the start or the workflow task ("Blob data size exceeds limit").
 */
export const TEMPORAL_PAYLOAD_LIMIT_BYTES = 2 * 1024 * 1024;

/**
 * Where a worker warns about a payload's size, in bytes: at half of {@link TEMPORAL_PAYLOAD_LIMIT_BYTES}.
 * What an apply records stays under it by design (a result's listed changes and a read's team
 * graphs at most 1,000,000 bytes each), so a warning means a payload nearing the limit.
 */
export const PAYLOAD_WARN_BYTES = TEMPORAL_PAYLOAD_LIMIT_BYTES / 2;

// ASCII-only text is by far the common case: one native test instead of a loop.
const ASCII = /^[\x00-\x7f]*$/;

/**
 * The number of bytes `text` takes in UTF-8, as `TextEncoder` writes it (a lone surrogate as
 * U+FFFD, three bytes). Output: a byte count.
 */
export function utf8Length(text: string): number {
  if (ASCII.test(text)) return text.length;
  let bytes = 0;
  for (let i = 0; i < text.length; i++) {
    const code = text.charCodeAt(i);
    if (code < 0x80) bytes += 1;
    else if (code < 0x800) bytes += 2;
    else if (code >= 0xd800 && code <= 0xdbff && i + 1 < text.length && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
      bytes += 4;
      i++;
    } else bytes += 3;
  }
  return bytes;
}

/** The bytes of `value`'s JSON in UTF-8: what the JSON payload converter sends for it. */
export function jsonBytes(value: unknown): number {
  return utf8Length(JSON.stringify(value));
}
