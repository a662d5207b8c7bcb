/**
 * Reading a definition file: YAML → schema → cross-field rules, with every problem located.
 */
import { readFile } from 'node:fs/promises';
import { LineCounter, parseDocument } from 'yaml';
import { DefinitionError, formatPath, type DefinitionProblem, type PathProblem, type PathSegment } from './problems.ts';
import { DefinitionSchema, type Definition } from './schema.ts';
import { schemaProblems } from './schema-problems.ts';
import { checkDefinition } from './semantics.ts';
import { locate } from './yaml-positions.ts';

/**
 * Parses and validates the text of a definition file.
 *
 * Input: the YAML text and the file name to report problems under (as the user gave it, so that
 * `FILE:LINE:COL` lines are links from where they ran). Output: the validated {@link Definition},
 * names trimmed and lists defaulted to `[]`.
 * Errors: {@link DefinitionError} (`invalid_definition`) with all problems of the first stage
 * that fails: YAML syntax, then the schema, then the cross-field rules of `checkDefinition`.
 */
export function parseDefinition(text: string, file: string): Definition {
  const lineCounter = new LineCounter();
  // prettyErrors off: the message stays one line; the place is computed below like any other.
  const doc = parseDocument(text, { lineCounter, prettyErrors: false });
  if (doc.errors.length > 0) {
    throw new DefinitionError(
      doc.errors.map((error) => {
        const { line, col } = lineCounter.linePos(error.pos[0]);
        return { file, line, column: col, path: '', message: error.message };
      }),
    );
  }

  let data: unknown;
  try {
    data = doc.toJS();
  } catch (error) {
    // Only for pathological documents (alias bombs): the library refuses to expand them.
    throw new DefinitionError([{ file, line: 1, column: 1, path: '', message: (error as Error).message }]);
  }

  const located = (problems: PathProblem[]): DefinitionProblem[] =>
    problems.map((p) => ({ file, ...locate(doc, lineCounter, p.path, p.target), path: formatPath(p.path), message: p.message }));

  const result = DefinitionSchema.safeParse(data);
  if (!result.success) throw new DefinitionError(located(schemaProblems(result.error.issues, DefinitionSchema, data)));

  const semantic = checkDefinition(result.data);
  if (semantic.length > 0) throw new DefinitionError(located(semantic));
  return result.data;
}

/**
 * Reads and validates a definition file (UTF-8 YAML).
 *
 * Input: a path, reported as given. Output: the validated {@link Definition}.
 * Errors: {@link DefinitionError} (`invalid_definition`) as {@link parseDefinition}, and also
 * when the file cannot be read (one problem at 1:1 naming the system error code).
 */
export async function loadDefinitionFile(path: string): Promise<Definition> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'unknown error';
    const reason = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'is a directory' : code;
    throw new DefinitionError([{ file: path, line: 1, column: 1, path: '', message: `cannot read the file: ${reason}` }]);
  }
  return parseDefinition(text, path);
}

/**
 * Where `path` is in a definition file, as `FILE:LINE:COL` (the key of its last segment), for
 * messages about a resource the file names (a protected one a plan would delete). Input: the file
 * as given and a path into the document (`['teams', 0, 'name']`). Output: the position, or
 * undefined when the file cannot be read or parsed. Raises nothing.
 */
export async function locateInFile(file: string, path: readonly PathSegment[]): Promise<string | undefined> {
  try {
    const lineCounter = new LineCounter();
    const doc = parseDocument(await readFile(file, 'utf8'), { lineCounter });
    const { line, column } = locate(doc, lineCounter, path, 'value');
    return `${file}:${line}:${column}`;
  } catch {
    return undefined;
  }
}
