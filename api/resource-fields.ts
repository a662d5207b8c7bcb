/**
 * One declaration of a resource's managed fields, from which every shape that carries them is
 * derived: the definition file's keys (camelCase, `definitions/schema.ts`), the request bodies
 * of create and PATCH and the resource as returned (snake_case, `api/schemas.ts`, so the
 * service and its OpenAPI document), the desired state a plan compares (`plan/`), and the
 * definition `teamctl export` writes back.
 *
 * Adding a field to a resource is one entry in its declaration (`api/schemas.ts`):
 *
 * ```ts
 * maxTokensPerDay: { rest: 'max_tokens_per_day', value: z.number().int().min(1), default: null, description: '…' },
 * ```
 *
 * Each entry says how the field is named on the wire (`rest`), what values it takes (`value`,
 * the same on both sides), and what an omitted field means: `required` (names), a `default`
 * that the service holds when the field is omitted at creation and that a definition omitting
 * it asks for (`null` makes the wire value nullable), or neither: then the field is *managed
 * only when the definition sets it* (an agent's `status`, so that pausing by hand survives an
 * apply of a file that does not mention it), and `serviceDefault` says what the service gives a
 * new resource (export leaves the field out when it holds that value). Such a field may also be
 * `nullable`: then a definition's `null` asks for null (an agent's `maxTokensPerDay: null`, an
 * unlimited budget), which leaving the key out does not.
 */
import { z } from 'zod';

/** A scalar a field may default to. */
export type FieldDefault = string | number | boolean | null;

/** How one managed field of a resource appears in a definition and on the wire. */
export interface FieldSpec {
  /** The field's name in request bodies and resources (snake_case). */
  readonly rest: string;
  /** The values it takes, as definitions and request bodies accept them (never null: see `default`). */
  readonly value: z.ZodType;
  /** Whether a definition and a create body must give it. */
  readonly required?: boolean;
  /** What an omitted field means (see the module's comment); `null` also lets the wire say null. */
  readonly default?: FieldDefault;
  /** For a field without `default` (managed only when set): the value the service gives a new resource. */
  readonly serviceDefault?: FieldDefault;
  /** For a field without `default`: whether null is a value of its own, in a definition and on the wire. */
  readonly nullable?: boolean;
  /** For editors (the definition's JSON Schema) and the OpenAPI document. */
  readonly description: string;
}

/** The fields of one resource, by their key in a definition. */
export type FieldSpecs = Readonly<Record<string, FieldSpec>>;

type Simplify<T> = { [K in keyof T]: T[K] } & {};

/** Fields that always have a value in a desired state: required or defaulted. */
type Always<S extends FieldSpec> = S extends { required: true } ? true : S extends { default: FieldDefault } ? true : false;

/** The schema of a field's value on the wire: nullable when its default is null or null is a value of its own. */
type WireValue<S extends FieldSpec> = S extends { default: null } ? z.ZodNullable<S['value']> : DefinitionValue<S>;

/** The schema of a field's value in a definition: nullable only when null is a value of its own. */
type DefinitionValue<S extends FieldSpec> = S extends { nullable: true } ? z.ZodNullable<S['value']> : S['value'];

/** The definition's object shape: camelCase keys, optional unless required. */
export type DefinitionShape<F extends FieldSpecs> = {
  -readonly [K in keyof F]: F[K] extends { required: true } ? DefinitionValue<F[K]> : z.ZodOptional<DefinitionValue<F[K]>>;
};

/** The create body's shape: snake_case keys, optional unless required, nullable where the default is null. */
export type CreateBodyShape<F extends FieldSpecs> = {
  -readonly [K in keyof F as F[K]['rest']]: F[K] extends { required: true } ? WireValue<F[K]> : z.ZodOptional<WireValue<F[K]>>;
};

/** The PATCH body's shape: every field optional. */
export type PatchBodyShape<F extends FieldSpecs> = {
  -readonly [K in keyof F as F[K]['rest']]: z.ZodOptional<WireValue<F[K]>>;
};

/** The resource's shape (as returned): every field present. */
export type ResourceShape<F extends FieldSpecs> = {
  -readonly [K in keyof F as F[K]['rest']]: WireValue<F[K]>;
};

/**
 * What a definition asks the service to hold, in wire names: required and defaulted fields always
 * present, the others only when the definition sets them. This is what a plan compares with the
 * live resource, and the body a create sends.
 */
export type WireFields<F extends FieldSpecs> = Simplify<
  { -readonly [K in keyof F as Always<F[K]> extends true ? F[K]['rest'] : never]: z.output<WireValue<F[K]>> } & {
    -readonly [K in keyof F as Always<F[K]> extends true ? never : F[K]['rest']]?: z.output<WireValue<F[K]>>;
  }
>;

/** A definition's entry for the resource (camelCase keys), as validated. */
export type DefinitionFields<F extends FieldSpecs> = z.output<z.ZodObject<DefinitionShape<F>>>;

/** The derived shapes of one resource, see {@link resourceFields}. */
export interface ResourceFields<F extends FieldSpecs> {
  readonly specs: F;
  /** The definition file's entry: strict, camelCase keys, with descriptions (extend it with keys of the file alone). */
  readonly definition: z.ZodObject<DefinitionShape<F>, z.core.$strict>;
  /** `POST` body: strict, snake_case keys. */
  readonly createBody: z.ZodObject<CreateBodyShape<F>, z.core.$strict>;
  /** `PATCH` body: every field of the create body, optional. */
  readonly patchBody: z.ZodObject<PatchBodyShape<F>, z.core.$strict>;
  /** The managed fields as the service returns them (a resource schema adds ids and counts). */
  readonly resourceShape: ResourceShape<F>;
  /** What a definition's entry asks the service to hold, in wire names (see {@link WireFields}). Raises nothing for a validated entry. */
  toWire(entry: DefinitionFields<F>): WireFields<F>;
  /**
   * A definition entry for a live resource (`teamctl export`): each field under its definition
   * key, left out when it holds its `default` (or, for a field managed only when set, its
   * `serviceDefault`), so that the entry reads as a person would write it and a plan of it finds
   * nothing to change. Input: the resource as returned (extra members are ignored).
   */
  fromWire(resource: object): Partial<DefinitionFields<F>>;
}

/**
 * Derives every shape of a resource's managed fields from one declaration (see the module's
 * comment). Input: the declaration, keys in the definition's camelCase. Output: the derived
 * schemas and mappings. Raises nothing.
 */
export function resourceFields<const F extends FieldSpecs>(specs: F): ResourceFields<F> {
  const entries = Object.entries(specs);
  const definitionValue = (spec: FieldSpec) => (spec.nullable ? spec.value.nullable() : spec.value);
  const wireValue = (spec: FieldSpec) => (spec.default === null ? spec.value.nullable() : definitionValue(spec));
  const definitionShape = Object.fromEntries(
    entries.map(([key, spec]) => [key, (spec.required ? definitionValue(spec) : definitionValue(spec).optional()).describe(spec.description)]),
  );
  const createShape = Object.fromEntries(entries.map(([, spec]) => [spec.rest, spec.required ? wireValue(spec) : wireValue(spec).optional()]));
  const resourceShape = Object.fromEntries(entries.map(([, spec]) => [spec.rest, wireValue(spec).describe(spec.description)]));
  const createBody = z.strictObject(createShape);
  // The generic shapes above are built entry by entry, which TypeScript cannot follow; their
  // types are stated once here, where the mapping is plain.
  return {
    specs,
    definition: z.strictObject(definitionShape) as unknown as ResourceFields<F>['definition'],
    createBody: createBody as unknown as ResourceFields<F>['createBody'],
    patchBody: createBody.partial() as unknown as ResourceFields<F>['patchBody'],
    resourceShape: resourceShape as unknown as ResourceShape<F>,
    toWire(entry) {
      const wire: Record<string, unknown> = {};
      for (const [key, spec] of entries) {
        const value = (entry as Record<string, unknown>)[key];
        if (value !== undefined) wire[spec.rest] = value;
        else if (spec.default !== undefined) wire[spec.rest] = spec.default;
      }
      return wire as WireFields<F>;
    },
    fromWire(resource) {
      const entry: Record<string, unknown> = {};
      for (const [key, spec] of entries) {
        const value = (resource as Record<string, unknown>)[spec.rest];
        if (value === undefined || value === (spec.default !== undefined ? spec.default : spec.serviceDefault)) continue;
        entry[key] = value;
      }
      return entry as Partial<DefinitionFields<F>>;
    },
  };
}

/** The wire fields a definition asks for, of a resource's {@link resourceFields} (`WireOf<typeof TeamFields>`). */
export type WireOf<R> = R extends ResourceFields<infer F> ? WireFields<F> : never;
