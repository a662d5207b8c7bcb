/**
 * Problems of a definition file and the error that carries them.
 *
 * Every problem is reported with its place, as compilers do (`FILE:LINE:COL: message`, 1-based),
 * so that editors and CI logs turn it into a link; all problems are collected before throwing,
 * so that one run shows everything to fix.
 */
import { ToolkitError } from '../errors/catalogue.ts';

/** A segment of a path in the document: a mapping key or a sequence index. */
export type PathSegment = string | number;

/** One problem, located in the file. `path` is rendered (`teams[0].agents[1].name`, `` at the root). */
export interface DefinitionProblem {
  file: string;
  /** 1-based line. */
  line: number;
  /** 1-based column. */
  column: number;
  path: string;
  /** What is wrong, without the place (see {@link formatProblem}). */
  message: string;
}

/**
 * Which part of the document a problem points at: the key of the pair at the path (an unknown
 * key) or the node at the path (a bad value; for a missing key, the path is the mapping's).
 */
export const ProblemTargets = { key: 'key', value: 'value' } as const;
export type ProblemTarget = (typeof ProblemTargets)[keyof typeof ProblemTargets];

/** A problem found on the data, before it is located in the source text. */
export interface PathProblem {
  path: PathSegment[];
  target: ProblemTarget;
  message: string;
  /**
   * Where in the value at `path` the problem is (0-based, in the value's text): a name inside an
   * expression or a template. The located column then points at it, not at the value's start.
   */
  offset?: number;
  /**
   * `offset` counts in the value trimmed of surrounding white space, as the schema trims an
   * expression: the place then skips the white space the value starts with in the file.
   */
  trimmed?: boolean;
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$-]*$/;

/**
 * Renders a path as in JavaScript: `teams[0].agents[1].provider`; keys that are not identifiers
 * are quoted (`["my key"]`). The empty path renders as the empty string.
 */
export function formatPath(path: readonly PathSegment[]): string {
  let out = '';
  for (const segment of path) {
    if (typeof segment === 'number') out += `[${segment}]`;
    else if (IDENTIFIER.test(segment)) out += out === '' ? segment : `.${segment}`;
    else out += `[${JSON.stringify(segment)}]`;
  }
  return out;
}

/** One problem as a line: `FILE:LINE:COL: PATH: MESSAGE` (no `PATH: ` for the root). */
export function formatProblem(problem: DefinitionProblem): string {
  const where = `${problem.file}:${problem.line}:${problem.column}`;
  return problem.path === '' ? `${where}: ${problem.message}` : `${where}: ${problem.path}: ${problem.message}`;
}

/**
 * A definition file failed to parse or validate: code `invalid_definition`, with every problem
 * in `problems` (sorted by place) and one {@link formatProblem} line per problem as message —
 * at most `maxListed` lines, then one line counting the others (a file of thousands of broken
 * entries still gives a message one can read).
 */
export class DefinitionError extends ToolkitError {
  readonly problems: readonly DefinitionProblem[];

  constructor(problems: readonly DefinitionProblem[], maxListed = Number.POSITIVE_INFINITY) {
    const sorted = [...problems].sort((a, b) => a.line - b.line || a.column - b.column);
    const lines = sorted.slice(0, maxListed).map(formatProblem);
    if (sorted.length > maxListed) lines.push(`${sorted[0]!.file}: … and ${sorted.length - maxListed} more problems`);
    super('invalid_definition', lines.join('\n'));
    this.name = 'DefinitionError';
    this.problems = sorted;
  }
}
