/**
 * Why a pipeline's CEL expression does not parse, in our words and at the offending place, for
 * `validate`: the run's parser (`@bufbuild/cel`) decides whether an expression parses, but says
 * only `found = but expecting end of input`, at the operator before the mistake; the parser of
 * `@marcbachmann/cel-js` (which `expression-check.ts` uses for types) tells the kind of mistake
 * and its place, which this turns into a sentence: `=` where `==` was meant, an expression that
 * ends after an operator, a string or a bracket never closed, a word used as an operator.
 *
 * Loaded by `validate` only when an expression does not parse. Raises nothing.
 */
import { parse, ParseError } from '@marcbachmann/cel-js';
import type { ExpressionProblem } from './expression-check.ts';
import { snippet } from './expression-check.ts';

/** The opening bracket of each closing one. */
const OPENER_OF: Record<string, string> = { ')': '(', ']': '[', '}': '{' };

/**
 * The innermost opening bracket that is never closed, found by a scan that skips strings (an
 * unterminated string is reported before this is asked), or -1.
 */
function unclosedOpener(text: string): number {
  const stack: Array<{ char: string; at: number }> = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!;
    if (c === '"' || c === "'") {
      if (text.startsWith(c.repeat(3), i)) {
        const end = text.indexOf(c.repeat(3), i + 3);
        i = end < 0 ? text.length : end + 2;
      } else {
        i += 1;
        while (i < text.length && text[i] !== c) i += text[i] === '\\' ? 2 : 1;
      }
    } else if (c === '(' || c === '[' || c === '{') {
      stack.push({ char: c, at: i });
    } else if ((c === ')' || c === ']' || c === '}') && stack.at(-1)?.char === OPENER_OF[c]) {
      stack.pop();
    }
  }
  return stack.at(-1)?.at ?? -1;
}

/** Words other languages use as operators, and CEL's. */
const WORD_OPERATORS: Record<string, string> = { and: '&&', or: '||', not: '!' };

/** What a stray character stands for, when it is a known slip (`=` for `==`, `&` for `&&`). */
function strayCharacter(text: string, at: number): ExpressionProblem {
  const c = text[at]!;
  if (c === '=') {
    if (text.slice(at - 2, at + 1) === '===') return { message: `=== is not a CEL operator (did you mean "=="?)`, offset: at - 2 };
    const next = text[at + 1];
    const meant = next === '>' ? '>=' : next === '<' ? '<=' : next === '!' ? '!=' : '==';
    const written = meant === '==' ? '=' : `=${next}`;
    return { message: `${written} is not a CEL operator (did you mean ${JSON.stringify(meant)}?)`, offset: at };
  }
  if (c === '&' || c === '|') return { message: `${c} is not a CEL operator (did you mean ${JSON.stringify(c + c)}?)`, offset: at };
  if (c === '#') return { message: '# does not start a comment in CEL (a comment starts with //)', offset: at };
  if (OPENER_OF[c]) return { message: `this ${c} closes nothing: no ${OPENER_OF[c]} before it is open`, offset: at };
  const word = /^[A-Za-z_]\w*/.exec(text.slice(at))?.[0];
  if (word && WORD_OPERATORS[word.toLowerCase()]) return { message: `${word} is not a CEL operator (did you mean ${JSON.stringify(WORD_OPERATORS[word.toLowerCase()])}?)`, offset: at };
  return { message: `unexpected ${JSON.stringify(c)}`, offset: at };
}

/** Operators after which an expression cannot end. */
const TRAILING = /(&&|\|\||==|!=|<=|>=|<|>|\+|-|\*|\/|%|!|\?|:|\.|\bin)\s*$/;

/**
 * Why `text` does not parse, in our words and at the offending place: `=` where `==` was meant
 * (did you mean "=="?), an expression that ends after an operator (`the expression ends after
 * &&`), a string never closed (at its opening quote), a bracket never closed (at it), a stray
 * character. Input: the text the run's parser refused, and what that parser said (returned when
 * nothing better can be said). Output: the problem, its message without a prefix.
 */
export function explainSyntaxError(text: string, fallback: ExpressionProblem): ExpressionProblem {
  let error: ParseError | undefined;
  try {
    parse(text);
  } catch (caught) {
    if (caught instanceof ParseError) error = caught;
  }
  if (!error) return fallback;
  const start = error.range?.start ?? fallback.offset;
  const end = error.range?.end ?? start;
  switch (error.code) {
    case 'unterminated_string':
    case 'unterminated_triple_quoted_string': {
      const quote = error.code === 'unterminated_string' ? text[start] ?? "'" : (text[start] ?? "'").repeat(3);
      return { message: `unterminated string: the ${quote} here is never closed`, offset: start };
    }
    case 'unexpected_character':
      return strayCharacter(text, start);
    case 'unexpected_token':
    case 'expected_token': {
      const atEnd = start >= text.trimEnd().length;
      if (atEnd) {
        const trailing = TRAILING.exec(text);
        if (trailing) return { message: `the expression ends after ${trailing[1]}`, offset: trailing.index };
        const opener = unclosedOpener(text);
        if (opener >= 0) return { message: `the ${text[opener]} here is never closed`, offset: opener };
        if (/^Expected COLON/.test(error.message)) return { message: 'the expression ends before the : that ? needs (a ? b : c)', offset: Math.max(0, text.lastIndexOf('?')) };
        return { message: 'the expression ends too early', offset: Math.max(0, text.trimEnd().length - 1) };
      }
      return { message: `unexpected ${snippet(text, start, Math.max(end, start + 1))}`, offset: start };
    }
    default:
      return fallback;
  }
}
