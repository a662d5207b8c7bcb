/**
 * Control characters shown, never obeyed: the one sanitiser of everything the CLI prints.
 *
 * What the CLI prints carries text it does not control: message content written by agents and
 * LLMs, names and subjects of the service, error details echoing them. A terminal obeys control
 * characters — `ESC ] 0 ; … BEL` retitles the window, `ESC [ 2 J` clears the screen, `ESC [ 1 A`
 * moves the cursor up to overwrite what was printed, `CR` rewrites a line — so a message could
 * hide or forge the lines around it. Every output of `teamctl` therefore goes through
 * {@link printableIo}, which writes each control character (Unicode category Cc: C0, DEL, C1)
 * other than tab and newline as its `\uXXXX` escape. That notation keeps JSON and YAML output
 * meaning the same (both read `\u001b` inside a quoted string as the character; neither writer
 * leaves a control character unquoted), so `--json` and `export` stay exact.
 *
 * The CLI's own colours (`io.style`, on a terminal only) are not data: {@link styleMarks} marks
 * them with a random per-process nonce that no text from outside can forge, and the writer turns
 * the marks into the real escape sequences after the text around them was made printable.
 */
import { randomBytes } from 'node:crypto';
import type { Style, StyleFormat } from './render.ts';

// C0 but tab (U+0009) and newline (U+000A), DEL and C1: the characters a terminal may act on.
const controlCharacters = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/g;

/**
 * `text` with every control character except tab and newline written as its escape (`ESC` →
 * `\u001b`, `CR` → `\u000d`, CSI → `\u009b`); everything else unchanged. Raises nothing.
 */
export function printable(text: string): string {
  return text.replace(controlCharacters, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * A `style` that writes marks (`NUL nonce + format NUL` … `NUL nonce - format NUL`), and a
 * `render` that makes the text between marks printable and replaces each mark with the escape
 * sequence `real` draws for it. NUL never reaches the CLI from the service (it refuses NUL in
 * every string), and a forged mark would need the nonce, 64 random bits drawn per process.
 */
export function styleMarks(real: Style): { style: Style; render: (text: string) => string } {
  const nonce = randomBytes(8).toString('hex');
  const mark = new RegExp(`\u0000${nonce}([+-])([a-z]+)\u0000`);
  const codes = new Map<string, [string, string]>();
  const codesOf = (format: string): [string, string] => {
    let pair = codes.get(format);
    if (!pair) {
      const [open = '', close = ''] = real(format as StyleFormat, '\u0000').split('\u0000');
      pair = [open, close];
      codes.set(format, pair);
    }
    return pair;
  };
  return {
    style: (format, text) => `\u0000${nonce}+${format}\u0000${text}\u0000${nonce}-${format}\u0000`,
    render(text) {
      // split with two capture groups: text, sign, format, text, sign, format, …, text.
      const parts = text.split(mark);
      let out = '';
      for (let i = 0; i < parts.length; i += 3) {
        out += printable(parts[i]!);
        if (i + 2 < parts.length) out += codesOf(parts[i + 2]!)[parts[i + 1] === '+' ? 0 : 1];
      }
      return out;
    },
  };
}
