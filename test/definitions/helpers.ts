/** Helpers of the definition tests. */
import { DefinitionError, parseDefinition } from '../../definitions/index.ts';

/** Joins lines into a YAML text, so that tests can count lines and columns at a glance. */
export function yaml(...lines: string[]): string {
  return `${lines.join('\n')}\n`;
}

/** The `FILE:LINE:COL: …` lines of the DefinitionError that parsing `text` throws. */
export function problemLines(text: string, file = 'x.yaml'): string[] {
  try {
    parseDefinition(text, file);
  } catch (error) {
    if (error instanceof DefinitionError) return error.message.split('\n');
    throw error;
  }
  throw new Error('expected a DefinitionError, but the definition is valid');
}

/** A valid head of a definition, lines 1–3; teams start on line 4. */
export const HEAD = ['apiVersion: teamctl/v1', 'organization:', '  name: acme'];
