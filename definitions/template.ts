/**
 * The templates of pipelines: Mustache (`{{ inputs.ticket }}`, `{{ steps.classify.reply }}`),
 * rendered without HTML escaping because messages are plain text.
 *
 * Pure and free of I/O and Zod, so the pipeline workflow renders with it inside Temporal's
 * deterministic sandbox and `validate` finds every reference before anything runs.
 */
import Mustache from 'mustache';

/** A name a template refers to, with its offset in the template text (0-based). */
export interface TemplateReference {
  name: string;
  offset: number;
  /** Inside a section (`{{#list}}…{{/list}}`), where a name may be relative to the section's item. */
  inSection: boolean;
}

/** What {@link templateReferences} found: the names, or why the template cannot be parsed. */
export type TemplateScan = { ok: true; references: TemplateReference[] } | { ok: false; message: string };

// Token kinds of Mustache.parse: variables, unescaped variables, sections and inverted sections.
const VARIABLE_KINDS = new Set(['name', '&', '#', '^']);

/**
 * Lists the names a template refers to. Partials (`{{> x}}`) are refused: a pipeline has nothing
 * to include. Output: {@link TemplateScan}; raises nothing.
 */
export function templateReferences(template: string): TemplateScan {
  let tokens: unknown[][];
  try {
    tokens = Mustache.parse(template) as unknown as unknown[][];
  } catch (error) {
    return { ok: false, message: `invalid template: ${(error as Error).message}` };
  }
  const references: TemplateReference[] = [];
  const walk = (list: unknown[][], inSection: boolean): string | undefined => {
    for (const token of list) {
      const [kind, name, start] = token as [string, string, number];
      if (kind === '>') return `invalid template: partials ({{> ${name}}}) are not supported`;
      if (VARIABLE_KINDS.has(kind)) references.push({ name, offset: start, inSection });
      if (Array.isArray(token[4])) {
        const problem = walk(token[4] as unknown[][], true);
        if (problem) return problem;
      }
    }
    return undefined;
  };
  const problem = walk(tokens, false);
  return problem ? { ok: false, message: problem } : { ok: true, references };
}

/** A value as text in a message: strings as they are, maps and lists as JSON (`{{ steps.classify.value }}`). */
function asText(value: unknown): string {
  return value !== null && typeof value === 'object' ? JSON.stringify(value) : String(value);
}

/**
 * Renders a template over `view` (plain data: `{ inputs, steps, iteration, item }`). Values are
 * inserted as they are (no HTML escaping), maps and lists as JSON; a missing name or a null
 * renders empty (`validate` rules out unknown names beforehand). Output: the text. Raises
 * Mustache's parse error for an invalid template.
 */
export function renderTemplate(template: string, view: Record<string, unknown>): string {
  return Mustache.render(template, view, {}, { escape: asText });
}
