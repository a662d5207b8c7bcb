/** The type checks of pipelines' expressions: what they declare, and that they refuse nothing the run accepts. */
import { celEnv } from '@bufbuild/cel';
import type { CelType } from '@bufbuild/cel';
import { describe, expect, it } from 'vitest';
import { DYN, INT, listOf, mapOf, objectOf, schemaType, STRING } from '../../definitions/cel-types.ts';
import type { CelDeclType } from '../../definitions/cel-types.ts';
import { checkExpressionTypes } from '../../definitions/expression-check.ts';

/** A run's type of an argument as validate declares it. */
function declared(type: CelType): CelDeclType {
  if (type.kind === 'list') return listOf(DYN);
  if (type.kind === 'map') return mapOf(DYN);
  if (type.kind === 'object') return { kind: 'scalar', name: type.name.endsWith('Timestamp') ? 'timestamp' : 'duration' };
  return { kind: 'scalar', name: (type.name === 'null_type' ? 'null' : type.name) as 'dyn' };
}

const OPERATORS: Record<string, string> = { '_==_': '==', '_!=_': '!=', '_<_': '<', '_<=_': '<=', '_>_': '>', '_>=_': '>=', '_+_': '+', '_-_': '-', '_*_': '*', '_/_': '/', '_%_': '%', '@in': 'in' };

describe('expression types', () => {
  it('the checker accepts every function, method and operator the run\'s CEL declares, with the argument types it declares', () => {
    const refused: string[] = [];
    for (const f of celEnv().funcs) {
      const variables: Record<string, CelDeclType> = {};
      f.arguments.forEach((argument, i) => (variables[`a${i}`] = declared(argument)));
      if (f.target) variables['t'] = declared(f.target);
      const args = f.arguments.map((_, i) => `a${i}`);
      let text: string;
      if (OPERATORS[f.name]) {
        // A JSON map's keys are strings: a number or a bool is never in one, which validate refuses as it refuses 1 == 'a'.
        if (f.name === '@in' && f.arguments[1]?.kind === 'map' && String(f.arguments[0]) !== 'string') continue;
        text = `a0 ${OPERATORS[f.name]} a1`;
      } else if (f.name === '!_' || f.name === '-_') {
        text = `${f.name[0]}a0`;
      } else if (/^[_@]/.test(f.name)) {
        continue;
      } else {
        text = f.target ? `t.${f.name}(${args.join(', ')})` : `${f.name}(${args.join(', ')})`;
      }
      const { problem } = checkExpressionTypes(text, variables);
      if (problem) refused.push(`${text} with ${f.arguments.map(String).join(', ')}: ${problem.message}`);
    }
    expect(refused).toEqual([]);
  });

  it('reply schemas: a type is declared only where the schema says it; numbers, several types and any type are dyn', () => {
    expect(schemaType({ type: 'string' }, 'v')).toEqual(STRING);
    expect(schemaType({ type: 'integer' }, 'v')).toEqual(INT);
    expect(schemaType({ enum: ['approve', 'reject'] }, 'v')).toEqual(STRING);
    expect(schemaType({ type: 'array', items: { type: 'integer' } }, 'v')).toEqual(listOf(INT));
    expect(schemaType({ type: 'object', additionalProperties: { type: 'string' } }, 'v')).toEqual(mapOf(STRING));
    expect(schemaType({ anyOf: [{ type: 'string' }, { const: 'x' }] }, 'v')).toEqual(STRING);
    expect(schemaType({ type: 'object', properties: { a: { type: 'string' } } }, 'v')).toEqual(objectOf({ a: STRING }, 'v', 'field', 'its schema has'));
    for (const anything of [{}, { type: 'number' }, { type: ['string', 'null'] }, { enum: [1, 'a'] }, { $ref: '#/$defs/x' }, { properties: { a: {} } }, true]) expect(schemaType(anything, 'v')).toEqual(DYN);
  });

  it('expression types: each mistake is said in our words at its part of the expression', () => {
    const error = objectOf({ code: STRING, message: STRING }, 'steps.a.error');
    const variables = { s: STRING, n: INT, l: listOf(STRING), e: error };
    const said = (text: string) => checkExpressionTypes(text, variables).problem;
    expect(said('e.cod')).toEqual({ message: 'unknown field "cod" of steps.a.error; it has code and message (did you mean "code"?)', offset: 2 });
    expect(said("n.startsWith('a')")).toEqual({ message: 'an int has no method startsWith; startsWith is a method of string', offset: 2 });
    expect(said('size(true)')).toEqual({ message: 'size does not take a bool; it takes (bytes), (list), (string), (map)', offset: 0 });
    expect(said('s + 1 == s')).toEqual({ message: 'cannot apply + to a string and an int (s + 1); turn a number into text with string(…)', offset: 2 });
    expect(said('l.exists(x, x > 1)')).toEqual({ message: 'cannot compare a string with an int (x > 1)', offset: 14 });
    expect(said('l[1.5] == s')).toEqual({ message: 'a list index must be an int, not a double (l[1.5])', offset: 2 });
    expect(said("contains(s, 'a')")).toEqual({ message: 'contains is a method: write x.contains(…)', offset: 0 });
    expect(said("s.lowerAscii() == 'a'")).toEqual({ message: 'unknown function "lowerAscii"', offset: 2 });
    expect(checkExpressionTypes('n', variables, { field: 'until', kind: 'bool' }).problem).toEqual({ message: 'until must be a bool (true or false), not an int', offset: 0 });
    // What the run accepts passes: numbers of two kinds compared, anything compared with null.
    for (const fine of ['n == 1.0', 'n < 1.5', 'e == null', 's != null', 'l == null', 'n == 1u']) expect(said(fine), fine).toBeUndefined();
  });
});
