import { describe, expect, it } from 'vitest';
import { jsonBytes, utf8Length } from '../../workflows/payload-bytes.ts';

describe('payload bytes', () => {
  it('utf8Length: counts what TextEncoder writes, for ASCII, accents, CJK, emoji and lone surrogates', () => {
    const samples = ['', 'plain ascii', 'café', 'naïve résumé', '日本語の指示', '한국어', '🙂 and 👩‍💻', 'a\ud800b', 'end\udc00', '\ud83d', 'mixed: é 日 🙂 x'];
    for (const text of samples) expect(utf8Length(text), text).toBe(new TextEncoder().encode(text).length);
  });

  it('jsonBytes: is the byte length of the JSON the payload converter sends, not its character count', () => {
    const value = { instructions: '指示'.repeat(10), name: 'bot' };
    expect(jsonBytes(value)).toBe(Buffer.byteLength(JSON.stringify(value)));
    expect(jsonBytes(value)).toBeGreaterThan(JSON.stringify(value).length);
  });
});
