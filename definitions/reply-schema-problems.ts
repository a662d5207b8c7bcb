/**
 * The problems of a typed reply's JSON Schema (2020-12), each at the offending keyword of the
 * definition file and in our words, all at once: an unknown keyword (`enums`, with a
 * did-you-mean), a keyword whose value is not of its kind (`type: bool`, `enum: a`), an unknown
 * format, a pattern that is not a regular expression. The keywords and formats known are those
 * of the very compiler a run uses (`reply-schema.ts`), so what passes here compiles there; a
 * schema with none of these problems is compiled, and what the compiler still refuses (a `$ref`
 * to nothing) is said at the schema.
 *
 * Loaded by `validate` only when a definition has a typed reply (ajv takes ~0.1 s to load).
 */
import { closestMatch } from './did-you-mean.ts';
import type { PathProblem, PathSegment } from './problems.ts';
import { compileReplySchema, REPLY_SCHEMA_DRAFT, schemaCompiler } from './reply-schema.ts';

/** Keywords whose value is one schema. */
const ONE_SCHEMA = new Set(['items', 'additionalProperties', 'not', 'if', 'then', 'else', 'contains', 'propertyNames', 'unevaluatedItems', 'unevaluatedProperties', 'additionalItems', 'contentSchema']);
/** Keywords whose value maps names to schemas. */
const SCHEMA_MAP = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas']);
/** Keywords whose value is a list of schemas. */
const SCHEMA_LIST = new Set(['allOf', 'anyOf', 'oneOf', 'prefixItems']);

/** The JSON types `type` names. */
const JSON_TYPES = ['string', 'number', 'integer', 'boolean', 'object', 'array', 'null'];

/** What a keyword's value must be, by keyword: the message when the meta-schema refuses it. */
function shouldBe(keyword: string, value: unknown): string {
  const k = `\`${keyword}\``;
  if (keyword === 'type') {
    const hint = typeof value === 'string' ? closestMatch(value, JSON_TYPES) : undefined;
    return `${k} must be one of ${JSON_TYPES.join(', ')}${hint === undefined ? '' : ` (did you mean ${JSON.stringify(hint)}?)`}`;
  }
  if (keyword === 'enum' || keyword === 'examples') return `${k} must be a list`;
  if (keyword === 'required') return `${k} must be a list of property names`;
  if (keyword === 'dependentRequired') return `${k} must map property names to lists of property names`;
  if (SCHEMA_MAP.has(keyword)) return `${k} must map names to schemas`;
  if (SCHEMA_LIST.has(keyword)) return `${k} must be a non-empty list of schemas`;
  if (ONE_SCHEMA.has(keyword)) return `${k} must be a schema: a mapping, or true or false`;
  if (['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'].includes(keyword)) return `${k} must be a number`;
  if (keyword === 'multipleOf') return `${k} must be a number greater than 0`;
  if (/^(min|max)(Length|Items|Properties|Contains)$/.test(keyword)) return `${k} must be a whole number, 0 or more`;
  if (['uniqueItems', 'readOnly', 'writeOnly', 'deprecated'].includes(keyword)) return `${k} must be true or false`;
  if (keyword === 'pattern') return `${k} must be a regular expression, as a string`;
  return `${k} must be a string`;
}

/** A JSON pointer (`/properties/a~1b/type`) as path segments, list indexes as numbers where the data has a list. */
function pointerPath(pointer: string, data: unknown): PathSegment[] {
  const out: PathSegment[] = [];
  let current = data;
  for (const raw of pointer.split('/').slice(1)) {
    const name = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    const segment: PathSegment = Array.isArray(current) && /^\d+$/.test(name) ? Number(name) : name;
    out.push(segment);
    current = current !== null && typeof current === 'object' ? (current as Record<PathSegment, unknown>)[segment] : undefined;
  }
  return out;
}

/**
 * The keyword a path into a schema ends in (or is inside the value of), and the path up to it:
 * walking from the root, a segment at a schema is a keyword; after a keyword of schemas come a
 * name or an index and a schema again. No keyword: the path ends at a (sub)schema itself.
 */
function keywordAt(path: readonly PathSegment[]): { keyword?: string; upTo: PathSegment[] } {
  let i = 0;
  while (i < path.length) {
    const keyword = String(path[i]);
    const upTo = path.slice(0, i + 1);
    if (ONE_SCHEMA.has(keyword)) {
      if (i === path.length - 1) return { keyword, upTo };
      i += 1;
    } else if (SCHEMA_MAP.has(keyword) || SCHEMA_LIST.has(keyword)) {
      if (i === path.length - 1) return { keyword, upTo };
      if (i + 1 === path.length - 1) return { upTo: path.slice() };
      i += 2;
    } else {
      return { keyword, upTo };
    }
  }
  return { upTo: path.slice() };
}

/** The value at `path` of plain data. */
function valueAt(data: unknown, path: readonly PathSegment[]): unknown {
  let current = data;
  for (const segment of path) current = current !== null && typeof current === 'object' ? (current as Record<PathSegment, unknown>)[segment] : undefined;
  return current;
}

/** Unknown keywords, unknown formats and broken patterns of a schema and its subschemas. */
function walk(schema: unknown, path: PathSegment[], known: ReadonlySet<string>, formats: readonly string[], problems: PathProblem[]): void {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) return;
  for (const [keyword, value] of Object.entries(schema as Record<string, unknown>)) {
    const at = [...path, keyword];
    if (!known.has(keyword)) {
      const match = closestMatch(keyword, [...known]);
      const hint = match === undefined ? ' (JSON Schema 2020-12 has no such keyword; a note goes in description or $comment)' : ` (did you mean ${JSON.stringify(match)}?)`;
      problems.push({ path: at, target: 'key', message: `unknown keyword ${JSON.stringify(keyword)}${hint}` });
    } else if (ONE_SCHEMA.has(keyword)) {
      walk(value, at, known, formats, problems);
    } else if (SCHEMA_LIST.has(keyword) && Array.isArray(value)) {
      value.forEach((sub, i) => walk(sub, [...at, i], known, formats, problems));
    } else if (SCHEMA_MAP.has(keyword) && value !== null && typeof value === 'object' && !Array.isArray(value)) {
      for (const [name, sub] of Object.entries(value)) {
        if (keyword === 'patternProperties' && regexError(name) !== undefined) problems.push({ path: [...at, name], target: 'key', message: `${JSON.stringify(name)} is not a regular expression: ${regexError(name)}` });
        walk(sub, [...at, name], known, formats, problems);
      }
    } else if (keyword === 'format' && typeof value === 'string' && !formats.includes(value)) {
      const match = closestMatch(value, formats);
      problems.push({ path: at, target: 'value', message: `unknown format ${JSON.stringify(value)}${match === undefined ? ` (known: ${formats.join(', ')})` : ` (did you mean ${JSON.stringify(match)}?)`}` });
    } else if (keyword === 'pattern' && typeof value === 'string' && regexError(value) !== undefined) {
      problems.push({ path: at, target: 'value', message: `\`pattern\` is not a regular expression: ${regexError(value)}` });
    }
  }
}

/** Why a pattern does not compile as the validator compiles it (a Unicode regular expression), or undefined. */
function regexError(pattern: string): string | undefined {
  try {
    new RegExp(pattern, 'u');
    return undefined;
  } catch (error) {
    return (error as Error).message.replace(/^Invalid regular expression: \/.*\/u?: /, '');
  }
}

/**
 * Checks a reply schema as the run's compiler will read it. Input: the schema as the definition
 * has it. Output: problems with paths inside the schema (`['properties', 'category', 'enums']`),
 * each at the offending keyword (its key for an unknown one, its value otherwise), in file order
 * once located; none for a schema that compiles. Raises nothing.
 */
export function replySchemaProblems(schema: Record<string, unknown>): PathProblem[] {
  if (schema['$schema'] !== undefined && schema['$schema'] !== REPLY_SCHEMA_DRAFT) {
    return [{ path: ['$schema'], target: 'value', message: `$schema must be ${REPLY_SCHEMA_DRAFT} (or left out): replies are checked against JSON Schema 2020-12` }];
  }
  const ajv = schemaCompiler();
  const problems: PathProblem[] = [];
  walk(schema, [], new Set(Object.keys(ajv.RULES.keywords)), Object.keys(ajv.formats), problems);
  if (!ajv.validateSchema(schema)) {
    // One problem per place, at the keyword's value or at the element of it that is wrong
    // (`required: [a, 1]`); a place inside another one's value says it better than the outer one.
    const paths = new Map<string, PathSegment[]>();
    for (const error of ajv.errors ?? []) {
      const path = pointerPath(error.instancePath, schema);
      paths.set(path.join('\u0000'), path);
    }
    const all = [...paths.values()];
    for (const path of all) {
      if (all.some((other) => other.length > path.length && path.every((segment, i) => other[i] === segment) && keywordAt(other).keyword === keywordAt(path).keyword)) continue;
      const { keyword } = keywordAt(path);
      const message = keyword === undefined ? 'a schema must be a mapping, or true or false' : shouldBe(keyword, valueAt(schema, path));
      problems.push({ path, target: 'value', message });
    }
  }
  if (problems.length > 0) return problems;
  const compiled = compileReplySchema(schema);
  return compiled.ok ? [] : [{ path: [], target: 'value', message: `invalid JSON Schema: ${compiled.message}` }];
}
