/**
 * Maps a path in a parsed YAML document back to a line and column of its source.
 */
import { isAlias, isMap, isPair, isScalar, isSeq, Scalar, type Document, type LineCounter, type Node } from 'yaml';
import type { PathSegment, ProblemTarget } from './problems.ts';

/** A 1-based position in the source. */
export interface SourcePosition {
  line: number;
  column: number;
}

/** Follows an alias to its anchor, whose node holds the text. */
function resolve(doc: Document, node: unknown): unknown {
  return isAlias(node) ? node.resolve(doc) : node;
}

/** The start offset of a node, when it has a place in the source. */
function startOf(node: unknown): number | undefined {
  return node && typeof node === 'object' && 'range' in node ? (node as Node).range?.[0] : undefined;
}

/** Whether a scalar is an empty value (`key:` with nothing after it), which has no useful place. */
function isEmptyValue(node: unknown): boolean {
  return isScalar(node) && node.value === null && node.source === '';
}

/**
 * Finds where `path` is in `doc`: the key of the last pair for target `key`, the node for target
 * `value` (an empty value points at its key, as it has no text of its own). Follows the path as
 * far as it exists and points at the deepest node found, and at 1:1 when nothing is found.
 * Input: the document parsed with `lineCounter`. Output: a 1-based line and column.
 */
export function locate(
  doc: Document,
  lineCounter: LineCounter,
  path: readonly PathSegment[],
  target: ProblemTarget,
  within?: { offset: number; source: string; trimmed?: boolean },
): SourcePosition {
  let node: unknown = resolve(doc, doc.contents);
  let offset = startOf(node) ?? 0;
  let keyOffset = offset;
  let followed = 0;
  for (const segment of path) {
    let next: unknown;
    if (isMap(node)) {
      const pair = node.items.find((item) => isPair(item) && String(isScalar(item.key) ? item.key.value : item.key) === String(segment));
      if (!pair) break;
      keyOffset = startOf(pair.key) ?? keyOffset;
      next = pair.value;
    } else if (isSeq(node) && typeof segment === 'number') {
      next = node.items[segment];
      keyOffset = startOf(next) ?? keyOffset;
    } else {
      break;
    }
    node = resolve(doc, next);
    const start = isEmptyValue(node) ? undefined : startOf(node);
    offset = target === 'key' ? keyOffset : (start ?? keyOffset);
    followed += 1;
  }
  if (within && target === 'value' && followed === path.length && isScalar(node) && typeof node.value === 'string') {
    // An offset in the trimmed value counts from the value's first character that is not white space.
    const lead = within.trimmed ? node.value.length - node.value.trimStart().length : 0;
    offset = offsetInScalar(node, within.source, within.offset + lead) ?? offset;
  }
  const { line, col } = lineCounter.linePos(offset);
  return { line, column: col };
}

/**
 * Where character `at` of a scalar's value is in `raw`, its text in the source (from `rawStart`),
 * found by walking both side by side: a character of the value is the next one of the source
 * that is the same, once the source's escapes (`\"`, `\x41`, `\u00e9` in double quotes, `''` in
 * single quotes) count as the character they stand for, a backslash before a line break as
 * nothing, and white space the value lacks (a line break folded to a space, the indentation of a
 * continuation line) is skipped. Undefined when the two part ways.
 */
function alongside(raw: string, rawStart: number, value: string, at: number, style: Scalar['type']): number | undefined {
  const space = (c: string | undefined) => c === ' ' || c === '\t' || c === '\n' || c === '\r';
  let i = 0;
  let j = 0;
  while (j <= raw.length) {
    if (i >= at) {
      // Land on the character itself, past the white space a line fold leaves in the source.
      if (!space(value[at])) while (j < raw.length && space(raw[j])) j++;
      return j < raw.length || i === value.length ? rawStart + j : undefined;
    }
    if (j === raw.length) return undefined;
    const r = raw[j]!;
    if (style === Scalar.QUOTE_DOUBLE && r === '\\') {
      const next = raw[j + 1];
      if (next === '\n' || next === '\r') {
        // A line continuation: nothing in the value, nor the next line's indentation.
        j += 2;
        while (raw[j] === ' ' || raw[j] === '\t' || raw[j] === '\n') j++;
        continue;
      }
      const length = next === 'x' ? 4 : next === 'u' ? 6 : next === 'U' ? 10 : 2;
      i += next === 'U' ? String.fromCodePoint(Number.parseInt(raw.slice(j + 2, j + 10), 16) || 0).length : 1;
      j += length;
      continue;
    }
    if (style === Scalar.QUOTE_SINGLE && r === "'" && raw[j + 1] === "'") {
      i += 1;
      j += 2;
      continue;
    }
    if (r === value[i]) {
      i += 1;
      j += 1;
    } else if (space(r)) {
      j += 1;
    } else if (space(value[i])) {
      i += 1;
    } else {
      return undefined;
    }
  }
  return undefined;
}

/**
 * The source offset of character `at` of a string scalar's value: in a plain or quoted scalar,
 * on one line or folded over several, escapes included, and in a block (`|`, `>`). Undefined
 * when it cannot be told: the caller points at the scalar's start.
 */
function offsetInScalar(node: Scalar, source: string, at: number): number | undefined {
  const value = node.value as string;
  const [start, end] = node.range ?? [];
  if (start === undefined || end === undefined || at < 0 || at > value.length) return undefined;
  const raw = source.slice(start, end);
  switch (node.type) {
    case Scalar.PLAIN:
      return alongside(raw, start, value, at, node.type);
    case Scalar.QUOTE_SINGLE:
    case Scalar.QUOTE_DOUBLE:
      return alongside(raw.slice(1), start + 1, value, at, node.type);
    case Scalar.BLOCK_LITERAL: {
      const before = value.slice(0, at);
      const lines = before.split('\n');
      const lineIndex = lines.length - 1;
      const column = lines[lineIndex]!.length;
      const valueLine = value.split('\n')[lineIndex] ?? '';
      // The header line (`|`, `|-`…) comes first; then one source line per value line.
      const sourceLines = raw.split('\n');
      let lineStart = start + sourceLines[0]!.length + 1;
      for (let i = 1; i <= lineIndex; i++) lineStart += (sourceLines[i] ?? '').length + 1;
      const sourceLine = sourceLines[lineIndex + 1];
      if (sourceLine === undefined || !sourceLine.endsWith(valueLine)) return undefined;
      return lineStart + (sourceLine.length - valueLine.length) + column;
    }
    case Scalar.BLOCK_FOLDED: {
      // The header line (`>`, `>-`…) comes first.
      const header = raw.indexOf('\n');
      return header < 0 ? undefined : alongside(raw.slice(header + 1), start + header + 1, value, at, node.type);
    }
    default:
      return undefined;
  }
}
