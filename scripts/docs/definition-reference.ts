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
  /** How a link to it reads (its heading without `Keys of`, or an entry's kind: `a map`). */
  name: string;
}

/**
 * Where the mappings of a shared definition stand: a definition reached by `$ref` from several
 * keys (`PipelineEntry`: an entry of `steps` in a pipeline, a loop or a map) has tables named by
 * what they are and where they may stand, not by the first path the walk met them on.
 */
interface Shared {
  /** The key whose entries it is (`steps`). */
  key: string;
  /** What holds such a key, in walk order, each once (`a pipeline`, `a loop`, `a map`). */
  holders: string[];
  /** Other keys whose entries take one of its mappings (`parallel`: its steps are steps). */
  alsoIn: Map<Node, string[]>;
}

/** `a, b or c`. */
const orList = (items: readonly string[]) => (items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} or ${items.at(-1)}`);

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

/** The last key of a path: `steps` of `pipelines[].steps`, `parallel` of `steps[].parallel[]`. */
function lastKey(path: string): string {
  return path.replace(/(\[\])+$/, '').split('.').at(-1) ?? path;
}

/** Whether `node` is a mapping with named keys (gets its own table). */
const isMapping = (node: Node) => node.type === 'object' && node.properties !== undefined;

/** Where a table is met: its path, the shared definition it belongs to (if any), and its holder's label. */
interface Place {
  /** Path from the top (`teams[].agents[]`), or from the shared definition's key (`steps[].map`). */
  path: string;
  /** The shared definition whose entries (or their parts) it describes. */
  shared?: Shared;
  /** The label of the mapping that holds it (`a pipeline`, `a map`): where its keys stand. */
  holder: string;
}

/**
 * Walks the schema from the top, giving every mapping its table (in document order: a parent
 * before its children; the variants of one list all before what is inside any of them, so each is
 * named where it is first met). Two mappings with the same schema (a step at the top of `steps` and
 * in a parallel group) share the first one's table. A definition reached by `$ref` (the entries of
 * `steps`, which nest in loops and maps) is one set of tables for every place it stands, headed by
 * what each mapping is and where it may stand (see {@link Shared}); headings are made once the
 * walk has seen every such place.
 */
class Reference {
  readonly tables: Table[] = [];
  readonly #bySchema = new Map<string, Table>();
  readonly #definitions: Record<string, Node>;
  readonly #shared = new Map<string, Shared>();
  /** How each table is headed once the walk is done. */
  readonly #headings = new Map<Table, () => { heading: string; name: string }>();

  constructor(root: Node) {
    this.#definitions = root.definitions ?? {};
  }

  /** The table whose keys are being walked (the parent of a table made now). */
  #current: Table | undefined;
  readonly #parent = new Map<Table, Table | undefined>();

  /**
   * Gives every table its heading and anchor (after the walk: a shared heading names every place),
   * and puts the tables in document order: each right after its parent's and its elder siblings'
   * (the variants of a list are made before what is inside them, but each is followed by its parts).
   */
  finish(): void {
    const children = new Map<Table | undefined, Table[]>();
    for (const table of this.tables) children.set(this.#parent.get(table), [...(children.get(this.#parent.get(table)) ?? []), table]);
    const ordered: Table[] = [];
    const emit = (table: Table) => {
      ordered.push(table);
      for (const child of children.get(table) ?? []) emit(child);
    };
    for (const top of children.get(undefined) ?? []) emit(top);
    this.tables.splice(0, this.tables.length, ...ordered);
    const slugger = new Set<string>();
    for (const table of this.tables) {
      const { heading, name } = this.#headings.get(table)!();
      table.heading = heading;
      table.name = name;
      table.anchor = slug(heading);
      if (slugger.has(table.anchor)) throw new Error(`definitions reference: two tables headed ${table.heading}`);
      slugger.add(table.anchor);
    }
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

  /**
   * The table of mapping `node` met at `place` (`variant`: its label among the variants of a list),
   * made on first sight; its keys are walked unless `walk` is false (the caller walks them later).
   */
  table(node: Node, place: Place, variant?: string, walk = true): Table {
    const key = JSON.stringify(node);
    const known = this.#bySchema.get(key);
    if (known) {
      // Met again under another key (a parallel group's steps): the heading says so.
      const owner = this.#ownerOf(known);
      const at = lastKey(place.path);
      if (owner && at !== owner.key) owner.alsoIn.set(known.node, [...new Set([...(owner.alsoIn.get(known.node) ?? []), at])]);
      return known;
    }
    const table: Table = { heading: '', anchor: '', node, summary: node.description ?? '', name: '' };
    this.#bySchema.set(key, table);
    this.tables.push(table);
    this.#parent.set(table, this.#current);
    this.#headings.set(table, () => this.#heading(node, place, variant));
    if (walk) this.walkKeys(table, place, variant);
    return table;
  }

  /** Walks the keys of a table's mapping: their mappings get tables of their own. */
  walkKeys(table: Table, place: Place, variant?: string): void {
    // Inside an entry of a shared definition, its parts are held by the entry (`a map`, not `the map`).
    const holder = variant ?? (place.shared && place.path !== '' ? place.holder : label(table.node));
    const outer = this.#current;
    this.#current = table;
    for (const [name, child] of Object.entries(table.node.properties ?? {})) {
      this.visit(child, { ...place, path: `${place.path === '' ? '' : `${place.path}.`}${name}`, holder });
    }
    this.#current = outer;
  }

  /** The shared definition a table's mapping is an entry of, if any. */
  #ownerOf(table: Table): Shared | undefined {
    for (const shared of this.#shared.values()) if (this.#entries.get(table) === shared) return shared;
    return undefined;
  }

  /** The tables that are entries (variants) of a shared definition. */
  readonly #entries = new Map<Table, Shared>();

  /**
   * A table's heading and the name links give it: by its path from the top; within a shared
   * definition, by what it is and where it may stand (`Keys of a map: an entry of \`steps\` in a
   * pipeline, a loop or a map`, linked as `a map`), its parts by their path in it (`Keys of \`map\`
   * in a map`).
   */
  #heading(node: Node, place: Place, variant?: string): { heading: string; name: string } {
    if (place.path === '') return { heading: 'Keys of the file', name: 'the file' };
    const shared = place.shared;
    const named = (name: string, heading = `Keys of ${name}`) => ({ heading, name });
    if (!shared) return named(`\`${place.path}\`${variant ? `, ${variant}` : ''}`);
    const root = `${shared.key}[]`;
    if (place.path === root) {
      const also = shared.alsoIn.get(node) ?? [];
      const where = `an entry of \`${shared.key}\` in ${orList(shared.holders)}${also.map((k) => `, or of \`${k}\``).join('')}`;
      const kind = variant ?? label(node);
      return named(kind, `Keys of ${kind}: ${where}`);
    }
    // A mapping inside an entry: named by its path from the entry, in the entry that holds it.
    return named(`\`${place.path.slice(root.length + 1)}\` in ${place.holder}`);
  }

  /** Finds the mappings under a key's schema. */
  visit(raw: Node, place: Place): void {
    const items = raw.type === 'array' && raw.items && !Array.isArray(raw.items) ? raw.items : undefined;
    const ref = items?.$ref ?? items?.allOf?.[0]?.$ref;
    if (ref !== undefined) {
      // A shared definition: its entries are tables of their own, whatever holds them.
      const key = lastKey(place.path);
      let shared = this.#shared.get(ref);
      if (!shared) {
        shared = { key, holders: [], alsoIn: new Map() };
        this.#shared.set(ref, shared);
        if (!shared.holders.includes(place.holder)) shared.holders.push(place.holder);
        this.visit(items!, { path: `${key}[]`, shared, holder: place.holder });
      } else if (!shared.holders.includes(place.holder)) shared.holders.push(place.holder);
      return;
    }
    const node = this.resolve(raw);
    if (isMapping(node)) this.table(node, place);
    else if (node.type === 'array' && node.items && !Array.isArray(node.items)) this.visit(node.items, { ...place, path: `${place.path}[]` });
    else if (node.anyOf) {
      const objects = node.anyOf.filter(isMapping);
      // Every variant named here first, then what is inside each.
      const made = objects.map((variant) => {
        const isNew = !this.#bySchema.has(JSON.stringify(variant));
        const table = this.table(variant, place, objects.length > 1 ? label(variant) : undefined, false);
        if (isNew && place.shared && place.path === `${place.shared.key}[]`) this.#entries.set(table, place.shared);
        return { table, isNew, variant };
      });
      for (const { table, isNew, variant } of made) if (isNew) this.walkKeys(table, place, objects.length > 1 ? label(variant) : undefined);
    } else if (node.type === 'object' && typeof node.additionalProperties === 'object') this.visit(node.additionalProperties, { ...place, path: `${place.path}.NAME` });
  }

  /** A link to the table of mapping `node` (already made by the walk). */
  link(node: Node): string {
    const table = this.#bySchema.get(JSON.stringify(node));
    if (!table) throw new Error('definitions reference: a mapping without a table');
    return `[${table.name}](#${table.anchor})`;
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
  reference.table(schema, { path: '', holder: 'the file' });
  reference.finish();
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
