/**
 * Reading a definition file: bytes → UTF-8 text → one YAML document → schema → cross-field
 * rules, with every problem located, and with bounds on what a hostile or broken file can cost.
 *
 * Bounds, each refused with its own message naming the file (exit 1 in the CLI), never a stack
 * overflow or gigabytes of memory:
 * - size: over `maxBytes` (default {@link DEFAULT_MAX_DEFINITION_BYTES}, 1 MiB) the file is
 *   refused before it is read, naming its size;
 * - encoding: invalid UTF-8 is refused with the byte offset (and line and column) of the first
 *   bad byte;
 * - one document per file: a second `---` document gets our message, not the library's;
 * - nesting deeper than {@link MAX_NESTING} levels (a definition rarely needs more than 16: a
 *   reply schema of a step in a map in a loop) is refused at its first too-deep node, before
 *   anything recursive walks the data;
 * - aliases: more than {@link MAX_ALIAS_COUNT} uses of anchors (the `yaml` library's
 *   `maxAliasCount`) is refused as an alias bomb; quoted values are cut to a few dozen
 *   characters in messages, and at most {@link MAX_REPORTED_PROBLEMS} problems are listed.
 */
import { open, readFile } from 'node:fs/promises';
import { isAlias, isCollection, isPair, LineCounter, parseDocument, type Document } from 'yaml';
import { partialSemanticProblems } from './partial.ts';
import { DefinitionError, formatPath, type DefinitionProblem, type PathProblem, type PathSegment } from './problems.ts';
import { DefinitionSchema, type Definition } from './schema.ts';
import { schemaProblems } from './schema-problems.ts';
import { checkDefinition } from './semantics.ts';
import { locate } from './yaml-positions.ts';

/** Largest definition file read by default: 1 MiB (`--max-file-size`, `TEAMCTL_MAX_FILE_SIZE`). */
export const DEFAULT_MAX_DEFINITION_BYTES = 1024 * 1024;

/** Deepest nesting of mappings and lists accepted; a definition rarely needs more than 16 (a reply schema of a step in a map in a loop). */
export const MAX_NESTING = 32;

/** Most alias uses (`*anchor`) expanded; more is an alias bomb (the `yaml` library's `maxAliasCount`). */
export const MAX_ALIAS_COUNT = 100;

/** Most problems listed in one error; the rest are counted. */
export const MAX_REPORTED_PROBLEMS = 200;

/** Options of {@link loadDefinitionFile}. */
export interface LoadOptions {
  /** Largest file accepted, in bytes (default {@link DEFAULT_MAX_DEFINITION_BYTES}). */
  maxBytes?: number;
}

/** `1.5 MiB`, `812 KiB`, `90 bytes`. */
export function formatBytes(bytes: number): string {
  if (bytes >= 1024 * 1024) return `${Number((bytes / 1024 / 1024).toFixed(1))} MiB`;
  if (bytes >= 1024) return `${Number((bytes / 1024).toFixed(1))} KiB`;
  return `${bytes} bytes`;
}

/** A problem of the whole file, at 1:1 or at a given place. */
function fileProblem(file: string, message: string, line = 1, column = 1): DefinitionError {
  return new DefinitionError([{ file, line, column, path: '', message }]);
}

/**
 * The offset of the first byte that is not part of a well-formed UTF-8 sequence (RFC 3629:
 * no overlong forms, no surrogates, nothing above U+10FFFF), or -1 when all of `bytes` is UTF-8.
 */
export function invalidUtf8Offset(bytes: Uint8Array): number {
  let i = 0;
  while (i < bytes.length) {
    const b = bytes[i]!;
    if (b < 0x80) {
      i++;
      continue;
    }
    let need: number;
    let min: number;
    let max = 0xbf;
    if (b >= 0xc2 && b <= 0xdf) [need, min] = [1, 0x80];
    else if (b === 0xe0) [need, min] = [2, 0xa0];
    else if (b >= 0xe1 && b <= 0xef) [need, min, max] = [2, 0x80, b === 0xed ? 0x9f : 0xbf];
    else if (b === 0xf0) [need, min] = [3, 0x90];
    else if (b >= 0xf1 && b <= 0xf3) [need, min] = [3, 0x80];
    else if (b === 0xf4) [need, min, max] = [3, 0x80, 0x8f];
    else return i;
    // The second byte has the narrowed range; the others are plain continuation bytes.
    for (let k = 1; k <= need; k++) {
      const c = bytes[i + k];
      if (c === undefined) return i;
      if (k === 1 ? c < min || c > max : c < 0x80 || c > 0xbf) return i;
    }
    i += need + 1;
  }
  return -1;
}

/** 1-based line and column (in bytes) of a byte offset. */
function byteLineColumn(bytes: Uint8Array, offset: number): { line: number; column: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset; i++) {
    if (bytes[i] === 0x0a) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, column: offset - lineStart + 1 };
}

/**
 * The first node nested deeper than {@link MAX_NESTING} levels, walked without recursion (so a
 * `[[[[…` file cannot overflow the stack here), or undefined. Aliases are not followed.
 */
function tooDeep(doc: Document): { range?: [number, number, number] | null } | undefined {
  const stack: Array<[unknown, number]> = [[doc.contents, 1]];
  while (stack.length > 0) {
    const [node, depth] = stack.pop()!;
    if (isPair(node)) {
      stack.push([node.key, depth], [node.value, depth]);
    } else if (isCollection(node)) {
      if (depth > MAX_NESTING) return node;
      for (const item of node.items) stack.push([item, depth + 1]);
    }
  }
  return undefined;
}

/** Flow brackets (`[`, `{`) open at once past which the text is refused before the parser sees it. */
const MAX_FLOW_DEPTH = 256;

/**
 * The offset of the first flow bracket nested past {@link MAX_FLOW_DEPTH}, found by a scan of the
 * text that skips comments and quoted strings, or -1. The YAML parser recurses into flow
 * collections: without this, `[[[[…` costs it seconds before its stack runs out. The scan only
 * errs towards missing a deep file (a quote in a plain scalar hides what follows), which the
 * parser and {@link tooDeep} still refuse.
 */
function flowTooDeep(text: string): number {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (c === '#' && (i === 0 || /\s/.test(text[i - 1]!))) {
      const end = text.indexOf('\n', i);
      if (end < 0) break;
      i = end;
    } else if (c === '"' || c === "'") {
      for (i++; i < text.length && text[i] !== c; i++) if (c === '"' && text[i] === '\\') i++;
    } else if (c === '[' || c === '{') {
      if (++depth > MAX_FLOW_DEPTH) return i;
    } else if ((c === ']' || c === '}') && depth > 0) {
      depth--;
    }
  }
  return -1;
}

/**
 * Parses and validates the text of a definition file.
 *
 * Input: the YAML text and the file name to report problems under (as the user gave it, so that
 * `FILE:LINE:COL` lines are links from where they ran). Output: the validated {@link Definition},
 * names trimmed and lists defaulted to `[]`.
 * Errors: {@link DefinitionError} (`invalid_definition`) with every problem found: YAML syntax
 * errors alone (the rest cannot be read reliably; a tab in the indentation alone, without the
 * errors that follow from it), otherwise the schema's problems and the
 * cross-field rules' together, in file order (the rules run on the parts that pass the schema,
 * `partial.ts`); a second document, nesting past {@link MAX_NESTING} and an alias bomb each as
 * one problem of their own.
 */
export function parseDefinition(text: string, file: string): Definition {
  const deepFlow = flowTooDeep(text);
  if (deepFlow >= 0) {
    const before = text.slice(0, deepFlow);
    const line = before.split('\n').length;
    throw fileProblem(file, `nested deeper than ${MAX_NESTING} levels (a definition rarely needs more than 16); refused`, line, deepFlow - before.lastIndexOf('\n'));
  }
  const lineCounter = new LineCounter();
  // prettyErrors off: the message stays one line; the place is computed below like any other.
  const doc = parseDocument(text, { lineCounter, prettyErrors: false });
  if (doc.errors.length > 0) {
    // A tab in indentation throws the parser off for the lines after it: the errors that follow
    // are its consequences, and would bury it. Each such tab is one problem, and the only ones.
    const tabs = doc.errors.filter((error) => error.code === 'TAB_AS_INDENT');
    throw new DefinitionError(
      (tabs.length > 0 ? tabs : doc.errors).map((error) => {
        const { line, col } = lineCounter.linePos(error.pos[0]);
        let message = error.message;
        if (error.code === 'TAB_AS_INDENT') message = 'a tab in the indentation: YAML indents with spaces only; replace it with spaces (errors that follow from it are not listed)';
        else if (error.code === 'MULTIPLE_DOCS') message = 'one document per file: a second YAML document starts here (after ---); put it in a file of its own';
        // The parser recurses into flow collections ([[[…); it reports its stack running out as an error.
        else if (/call stack/i.test(error.message)) message = `nested deeper than the parser can follow (a definition rarely needs more than 16 levels; the limit is ${MAX_NESTING}); refused`;
        return { file, line, column: col, path: '', message };
      }),
    );
  }
  const deep = tooDeep(doc);
  if (deep) {
    const { line, col } = lineCounter.linePos(deep.range?.[0] ?? 0);
    throw fileProblem(file, `nested deeper than ${MAX_NESTING} levels (a definition rarely needs more than 16); refused`, line, col);
  }

  let data: unknown;
  try {
    data = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
  } catch (error) {
    // The library refuses to expand more aliases than that: an alias bomb, or a file that should not use so many.
    const aliases = (error as Error).message.includes('alias');
    throw fileProblem(file, aliases ? `more than ${MAX_ALIAS_COUNT} aliases (*name) to expand: refused as an alias bomb; write the values out` : (error as Error).message);
  }
  if (isAlias(doc.contents)) throw fileProblem(file, 'the document is an alias; expected a mapping with apiVersion, organization and teams');

  const located = (problems: PathProblem[]): DefinitionProblem[] =>
    problems.map((p) => ({ file, ...locate(doc, lineCounter, p.path, p.target, p.offset === undefined ? undefined : { offset: p.offset, source: text, trimmed: p.trimmed === true }), path: formatPath(p.path), message: p.message }));

  const result = DefinitionSchema.safeParse(data);
  if (!result.success) {
    const schema = schemaProblems(result.error.issues, DefinitionSchema, data);
    const seen = new Set(schema.map((p) => `${formatPath(p.path)}\u0000${p.message}`));
    const semantic = partialSemanticProblems(data).filter((p) => !seen.has(`${formatPath(p.path)}\u0000${p.message}`));
    throw new DefinitionError(located([...schema, ...semantic]), MAX_REPORTED_PROBLEMS);
  }

  const semantic = checkDefinition(result.data);
  if (semantic.length > 0) throw new DefinitionError(located(semantic), MAX_REPORTED_PROBLEMS);
  return result.data;
}

/**
 * Reads and validates a definition file (UTF-8 YAML).
 *
 * Input: a path, reported as given, and {@link LoadOptions}. Output: the validated
 * {@link Definition}. Errors: {@link DefinitionError} (`invalid_definition`) as
 * {@link parseDefinition}, and also at 1:1 when the file cannot be read (naming the system
 * error), is larger than `maxBytes` (naming both sizes; nothing past the limit is read), or is
 * not UTF-8 (naming the byte offset, line and column of the first bad byte).
 */
export async function loadDefinitionFile(path: string, options: LoadOptions = {}): Promise<Definition> {
  const maxBytes = options.maxBytes ?? DEFAULT_MAX_DEFINITION_BYTES;
  let bytes: Buffer;
  try {
    const handle = await open(path, 'r');
    try {
      const { size } = await handle.stat();
      if (size > maxBytes) throw fileProblem(path, `the file is ${formatBytes(size)}, over the limit of ${formatBytes(maxBytes)} for a definition (raise it with --max-file-size or TEAMCTL_MAX_FILE_SIZE)`);
      // Read at most one byte past the limit: a file that grows while it is read is refused too.
      const buffer = Buffer.alloc(Math.min(size, maxBytes) + 1);
      let length = 0;
      for (;;) {
        const { bytesRead } = await handle.read(buffer, length, buffer.length - length, length);
        if (bytesRead === 0) break;
        length += bytesRead;
        if (length === buffer.length) break;
      }
      if (length > maxBytes) throw fileProblem(path, `the file grew over the limit of ${formatBytes(maxBytes)} for a definition while it was read`);
      bytes = buffer.subarray(0, length);
    } finally {
      await handle.close();
    }
  } catch (error) {
    if (error instanceof DefinitionError) throw error;
    const code = (error as NodeJS.ErrnoException).code ?? 'unknown error';
    const reason = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'is a directory' : code;
    throw fileProblem(path, `cannot read the file: ${reason}`);
  }
  const bad = invalidUtf8Offset(bytes);
  if (bad >= 0) {
    const { line, column } = byteLineColumn(bytes, bad);
    throw fileProblem(path, `not UTF-8: invalid byte 0x${bytes[bad]!.toString(16).padStart(2, '0')} at byte offset ${bad}; save the file as UTF-8`, line, column);
  }
  // A UTF-8 byte order mark is allowed and ignored.
  const text = bytes.toString('utf8').replace(/^\uFEFF/, '');
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
