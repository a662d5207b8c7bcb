/**
 * Maps a path in a parsed YAML document back to a line and column of its source.
 */
import { isAlias, isMap, isPair, isScalar, isSeq, type Document, type LineCounter, type Node } from 'yaml';
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
): SourcePosition {
  let node: unknown = resolve(doc, doc.contents);
  let offset = startOf(node) ?? 0;
  let keyOffset = offset;
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
  }
  const { line, col } = lineCounter.linePos(offset);
  return { line, column: col };
}
