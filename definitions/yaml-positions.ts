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
  within?: { offset: number; source: string },
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
    offset = offsetInScalar(node, within.source, within.offset) ?? offset;
  }
  const { line, col } = lineCounter.linePos(offset);
  return { line, column: col };
}

/**
 * The source offset of character `at` of a string scalar's value, where the source writes the
 * value out as it is: a plain or quoted scalar on one line without escapes before `at`, or a
 * literal block (`|`), whose lines are the value's lines indented. Undefined otherwise (folded
 * blocks, escapes, multi-line plain scalars): the caller points at the scalar's start.
 */
function offsetInScalar(node: Scalar, source: string, at: number): number | undefined {
  const value = node.value as string;
  const [start, end] = node.range ?? [];
  if (start === undefined || end === undefined || at < 0 || at > value.length) return undefined;
  const raw = source.slice(start, end);
  const before = value.slice(0, at);
  switch (node.type) {
    case Scalar.PLAIN:
      return raw.startsWith(value) ? start + at : undefined;
    case Scalar.QUOTE_SINGLE:
    case Scalar.QUOTE_DOUBLE: {
      const escaped = node.type === Scalar.QUOTE_SINGLE ? before.includes("'") : /["\\]/.test(before);
      return !escaped && !before.includes('\n') && raw.slice(1).startsWith(before) ? start + 1 + at : undefined;
    }
    case Scalar.BLOCK_LITERAL: {
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
    default:
      return undefined;
  }
}
