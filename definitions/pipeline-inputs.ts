/**
 * Inputs of pipeline runs as text turns into them: `--input n=4` on the command line, a rendered
 * template of a `run` entry. Pure and free of Zod, so the pipeline workflow imports it.
 */
import type { InputType, InputValue } from './pipeline-schema.ts';

/**
 * The value of `text` as an input of `type`: a number for `number` (finite, not blank), true or
 * false for `boolean` (exactly `true` or `false`), the text itself for `string`. Output: the
 * value, or undefined when the text is not one of that type.
 */
export function coerceInput(text: string, type: InputType): InputValue | undefined {
  if (type === 'number') {
    const n = Number(text);
    return text.trim() === '' || !Number.isFinite(n) ? undefined : n;
  }
  if (type === 'boolean') return text === 'true' ? true : text === 'false' ? false : undefined;
  return text;
}
