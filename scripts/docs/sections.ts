/**
 * Generated sections of the Markdown docs: a part of a hand-written page that a script writes
 * from the code (the definitions reference from the Zod schemas, the API's route table from the
 * OpenAPI document), between two HTML comments a reader of the rendered page never sees:
 *
 * ```md
 * <!-- BEGIN GENERATED definitions-reference: npm run docs:generate writes this part; do not edit it by hand -->
 * …
 * <!-- END GENERATED definitions-reference -->
 * ```
 *
 * Everything outside the markers is prose and stays as written.
 */

/** The comment that opens section `name`. */
export function beginMarker(name: string): string {
  return `<!-- BEGIN GENERATED ${name}: npm run docs:generate writes this part; do not edit it by hand -->`;
}

/** The comment that closes section `name`. */
export function endMarker(name: string): string {
  return `<!-- END GENERATED ${name} -->`;
}

/** Where section `name` lies in `text`: the offsets just after its begin marker and of its end marker. Errors: throws when a marker is missing or repeated. */
function bounds(text: string, name: string, file: string): { start: number; end: number } {
  const begin = beginMarker(name);
  const end = endMarker(name);
  const first = text.indexOf(begin);
  const last = text.indexOf(end);
  if (first < 0 || last < 0 || last < first || text.indexOf(begin, first + 1) >= 0 || text.indexOf(end, last + 1) >= 0) {
    throw new Error(`${file}: expected exactly one pair of markers for the generated section ${name}:\n${begin}\n${end}`);
  }
  return { start: first + begin.length, end: last };
}

/** The content of section `name` of `text` as it is now (between its markers, without the blank lines around it). */
export function readSection(text: string, name: string, file: string): string {
  const { start, end } = bounds(text, name, file);
  return text.slice(start, end).replace(/^\n+|\n+$/g, '');
}

/**
 * `text` with section `name` replaced by `content` (a blank line on either side, so the
 * Markdown around it renders as blocks). Errors: throws when the markers are missing or repeated.
 */
export function writeSection(text: string, name: string, content: string, file: string): string {
  const { start, end } = bounds(text, name, file);
  return `${text.slice(0, start)}\n\n${content.replace(/^\n+|\n+$/g, '')}\n\n${text.slice(end)}`;
}
