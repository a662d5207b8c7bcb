/**
 * The key-by-key reference of a definition file (docs/definitions.md, "Reference"), rendered from
 * the JSON Schema that `definitions/generate-schema.ts` derives from the Zod schemas: one table
 * per mapping of the file (the top level, `organization`, `teams[]`, `teams[].agents[]`, …) with
 * each key's type and limits, whether it is required or its default, and its `.describe()` text.
 * A key added to the Zod schema appears here on the next `npm run docs:generate`, and the docs
 * test fails until it does.
 */
import { slug } from 'github-slugger';
import { buildJsonSchema } from '../../definitions/generate-schema.ts';
import { SECRET_TEMPLATE_PATTERN } from '../../definitions/secrets.ts';

/** The part of a draft-07 JSON Schema the definition schema uses. */
interface Node {
  type?: string | string[];
  const?: unknown;
  enum?: unknown[];
  description?: string;
  default?: unknown;
  minLength?: number;
  maxLength?: number;
  minimum?: number;
  maximum?: number;
  minItems?: number;
  maxItems?: number;
  pattern?: string;
  format?: string;
  examples?: unknown[];
  properties?: Record<string, Node>;
  required?: string[];
  additionalProperties?: boolean | Node;
  propertyNames?: Node;
  items?: Node | Node[];
  anyOf?: Node[];
  allOf?: Node[];
  /** A reference into `definitions` (the schema of an entry of `steps`, used again inside loops and maps). */
  $ref?: string;
  definitions?: Record<string, Node>;
}

/** One table of the reference: a mapping of the file and where it is. */
interface Table {
  heading: string;
  anchor: string;
  node: Node;
  /** What the mapping is (its description). */
  summary: string;
}

/** The pattern of a secret reference, as `definitions/secrets.ts` emits it. */
const SECRET_REF_PATTERN = '^\\$\\{env:([A-Za-z_][A-Za-z0-9_]*)\\}$';

const number = (n: number) => n.toLocaleString('en-US');
/** A code span; one whose text holds a backtick (an HTTP header name's pattern) is fenced with two, as CommonMark allows. */
const code = (value: unknown) => {
  const text = typeof value === 'string' ? value : JSON.stringify(value);
  return text.includes('`') ? `\`\` ${text} \`\`` : `\`${text}\``;
};
/** Text safe inside a table cell: pipes escaped, line breaks folded. */
const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\s*\n\s*/g, ' ');

/** The description's first clause in lower case, to name a variant: "A step: a message…" → "a step". */
function label(node: Node): string {
  const first = (node.description ?? 'an entry').split(/[:;(]/)[0]!.trim();
  return first.charAt(0).toLowerCase() + first.slice(1);
}

/** The description of a key: its own, else its items' (a list of teams is described by "A team"). */
function describe(node: Node): string {
  if (node.description) return node.description;
  if (node.items && !Array.isArray(node.items) && node.items.description) return `Each entry is ${node.items.description.charAt(0).toLowerCase()}${node.items.description.slice(1)}`;
  return '';
}

/** Whether `node` is a mapping with named keys (gets its own table). */
const isMapping = (node: Node) => node.type === 'object' && node.properties !== undefined;

/**
 * Walks the schema from the top, giving every mapping its table (in document order: a parent
 * before its children). Two mappings with the same schema (a step at the top of `steps` and in a
 * parallel group) share the first one's table.
 */
class Reference {
  readonly tables: Table[] = [];
  readonly #bySchema = new Map<string, Table>();
  readonly #definitions: Record<string, Node>;

  constructor(root: Node) {
    this.#definitions = root.definitions ?? {};
  }

  /** `node` with a `$ref` followed (`#/definitions/NAME`, also as the one member of an `allOf`), keeping its own description. */
  resolve(node: Node): Node {
    if (node.allOf?.length === 1 && node.$ref === undefined) {
      const { allOf, ...own } = node;
      return { ...this.resolve(allOf[0]!), ...own };
    }
    if (node.$ref === undefined) return node;
    const name = /^#\/definitions\/(.+)$/.exec(node.$ref)?.[1];
    const target = name === undefined ? undefined : this.#definitions[name];
    if (!target) throw new Error(`definitions reference: cannot follow ${node.$ref}`);
    const { $ref: _ref, ...own } = node;
    return { ...target, ...own };
  }

  /** The table of mapping `node` found at `path`, made on first sight. */
  table(node: Node, path: string, variant?: string): Table {
    const key = JSON.stringify(node);
    const known = this.#bySchema.get(key);
    if (known) return known;
    const heading = path === '' ? 'Keys of the file' : `Keys of \`${path}\`${variant ? `, ${variant}` : ''}`;
    const table: Table = { heading, anchor: slug(heading), node, summary: node.description ?? '' };
    this.#bySchema.set(key, table);
    this.tables.push(table);
    for (const [name, child] of Object.entries(node.properties ?? {})) this.visit(child, `${path === '' ? '' : `${path}.`}${name}`);
    return table;
  }

  /** Finds the mappings under a key's schema. */
  visit(raw: Node, path: string): void {
    const node = this.resolve(raw);
    if (isMapping(node)) this.table(node, path);
    else if (node.type === 'array' && node.items && !Array.isArray(node.items)) this.visit(node.items, `${path}[]`);
    else if (node.anyOf) {
      const objects = node.anyOf.filter(isMapping);
      for (const variant of objects) this.table(variant, path, objects.length > 1 ? label(variant) : undefined);
    } else if (node.type === 'object' && typeof node.additionalProperties === 'object') this.visit(node.additionalProperties, `${path}.NAME`);
  }

  /** A link to the table of mapping `node` (already made by the walk). */
  link(node: Node): string {
    const table = this.#bySchema.get(JSON.stringify(node));
    if (!table) throw new Error('definitions reference: a mapping without a table');
    const name = table.heading.replace(/^Keys of /, '');
    return `[${name}](#${table.anchor})`;
  }

  /** The type of a value, with its limits: `string, 1–100 characters`, `list of [teams[]](#…)`. */
  type(raw: Node): string {
    const node = this.resolve(raw);
    if (node.const !== undefined) return `the constant ${code(node.const)}`;
    if (node.enum) return `one of ${node.enum.map(code).join(', ')}`;
    if (node.anyOf) {
      const nullable = node.anyOf.some((n) => n.type === 'null');
      const others = node.anyOf.filter((n) => n.type !== 'null').map((n) => this.type(n));
      return `${others.join(', or ')}${nullable ? ', or `null`' : ''}`;
    }
    if (Array.isArray(node.type)) return node.type.join(', ').replace(/, ([^,]*)$/, ' or $1');
    switch (node.type) {
      case 'string':
        return this.#string(node);
      case 'integer':
      case 'number': {
        const range = node.minimum !== undefined && node.maximum !== undefined ? ` from ${number(node.minimum)} to ${number(node.maximum)}` : '';
        return `${node.type}${range}`;
      }
      case 'boolean':
        return 'boolean';
      case 'array':
        return this.#array(node);
      case 'object':
        if (isMapping(node)) return this.link(node);
        if (typeof node.additionalProperties === 'object') {
          const keys = node.propertyNames?.pattern ? ` (names matching ${code(node.propertyNames.pattern)})` : '';
          return `mapping of names${keys} to ${this.type(node.additionalProperties)}`;
        }
        return 'mapping';
      default:
        return 'any value';
    }
  }

  #string(node: Node): string {
    if (node.pattern === SECRET_REF_PATTERN) return 'a secret reference `${env:NAME}`';
    if (node.pattern === SECRET_TEMPLATE_PATTERN) return `a secret template: one line holding at least one \`\${env:NAME}\`, every \`\${\` a reference, up to ${number(node.maxLength ?? 0)} characters`;
    const parts = ['string'];
    if (node.format === 'email') parts.push('an email address');
    if (node.minLength !== undefined && node.maxLength !== undefined && node.minLength > 0) parts.push(`${number(node.minLength)}–${number(node.maxLength)} characters`);
    else if (node.maxLength !== undefined) parts.push(`up to ${number(node.maxLength)} characters`);
    if (node.pattern && node.format !== 'email') parts.push(`matching ${code(node.pattern)}`);
    if (node.examples?.length) parts.push(`e.g. ${node.examples.map(code).join(', ')}`);
    return parts.join(', ');
  }

  #array(node: Node): string {
    const bound = node.minItems !== undefined && node.minItems > 0 && node.minItems !== node.maxItems ? `, at least ${node.minItems}` : '';
    if (Array.isArray(node.items)) return `a pair \`[${node.items.map((i) => i.type).join(', ')}]\` (${this.type(node.items[0]!).replace(/^string, /, '')} each)`;
    if (!node.items) return `list${bound}`;
    const items = this.resolve(node.items);
    if (items.anyOf) return `list of ${items.anyOf.map((n) => this.type(n)).join(' or ')}${bound}`;
    return `list of ${this.type(items)}${bound}`;
  }

  /** The markdown of one table: its heading, what it is, one row per key. */
  render(table: Table): string {
    const required = new Set(table.node.required ?? []);
    const rows = Object.entries(table.node.properties ?? {}).map(([name, child]) => {
      const presence = required.has(name) ? 'required' : child.default !== undefined ? `default ${code(child.default)}` : 'optional';
      return `| \`${name}\` | ${cell(this.type(child))} | ${presence} | ${cell(describe(child))} |`;
    });
    return [`#### ${table.heading}`, '', ...(table.summary ? [`${table.summary}.`, ''] : []), '| key | type | presence | what it is |', '|---|---|---|---|', ...rows].join('\n');
  }
}

/**
 * The reference section of docs/definitions.md: every mapping of a definition file as a table
 * of its keys, from `schema` (default: the JSON Schema of `definitions/teamctl.schema.json` as
 * built now). Output: Markdown. Errors: throws on a schema shape it cannot describe (a bug to fix
 * here when the definition schema grows one).
 */
export function renderDefinitionReference(schema: Node = buildJsonSchema() as Node): string {
  const reference = new Reference(schema);
  reference.table(schema, '');
  return reference.tables.map((t) => reference.render(t)).join('\n\n');
}

/** Keys of the schema whose description is empty, as `path.key` (the docs test requires none). */
export function undescribedKeys(schema: Node = buildJsonSchema() as Node): string[] {
  const missing: string[] = [];
  const reference = new Reference(schema);
  const seen = new Set<Node>();
  const walk = (raw: Node, path: string) => {
    const node = reference.resolve(raw);
    // A recursive schema (the entries of a loop's body) is walked once.
    if (raw.$ref !== undefined || raw.allOf !== undefined) {
      if (seen.has(node) || [...seen].some((n) => JSON.stringify(n) === JSON.stringify(node))) return;
      seen.add(node);
    }
    for (const [name, child] of Object.entries(node.properties ?? {})) {
      const at = path ? `${path}.${name}` : name;
      if (!describe(child)) missing.push(at);
      walk(child, at);
    }
    if (node.items && !Array.isArray(node.items)) walk(node.items, `${path}[]`);
    for (const variant of node.anyOf ?? []) walk(variant, path);
    if (typeof node.additionalProperties === 'object') walk(node.additionalProperties, `${path}.NAME`);
  };
  walk(schema, '');
  return missing;
}
