import { describe, expect, it } from 'vitest';
import { ToolkitError } from '../../errors/catalogue.ts';
import { isSecretRef, parseSecretRef, resolveSecret, secretHint, secretVariable } from '../../definitions/index.ts';

describe('definitions: secrets', () => {
  it('resolveSecret returns the value of a set variable', () => {
    expect(resolveSecret(parseSecretRef('${env:ECHO_KEY}'), { ECHO_KEY: 'sk-echo-0001' })).toBe('sk-echo-0001');
  });

  it('resolveSecret raises unresolved_secret naming the unset variable and no value', () => {
    const env = { OTHER: 'sk-other-secret-value' };
    let error: unknown;
    try {
      resolveSecret(parseSecretRef('${env:MISSING_KEY}'), env);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ToolkitError);
    expect((error as ToolkitError).code).toBe('unresolved_secret');
    expect((error as ToolkitError).message).toContain('MISSING_KEY');
    expect((error as ToolkitError).message).not.toContain('sk-other');
  });

  it('resolveSecret treats an empty variable as unset', () => {
    expect(() => resolveSecret('${env:EMPTY}', { EMPTY: '' })).toThrow(expect.objectContaining({ code: 'unresolved_secret' }));
  });

  it('parseSecretRef refuses a literal key with invalid_definition without repeating it', () => {
    let error: unknown;
    try {
      parseSecretRef('sk-literal-9999');
    } catch (e) {
      error = e;
    }
    expect((error as ToolkitError).code).toBe('invalid_definition');
    expect((error as ToolkitError).message).not.toContain('9999');
  });

  it('a reference names a variable by the POSIX rules', () => {
    expect(isSecretRef('${env:_A1}')).toBe(true);
    expect(isSecretRef('${env:1A}')).toBe(false);
    expect(isSecretRef('${env:A-B}')).toBe(false);
    expect(isSecretRef(' ${env:A}')).toBe(false);
    expect(secretVariable('${env:OPENAI_API_KEY}')).toBe('OPENAI_API_KEY');
  });

  it('secretHint is the last four characters, as the service shows them', () => {
    expect(secretHint('sk-abcdef1234')).toBe('1234');
  });

  it('secretHint of a key under 12 characters is the mask the service shows for it, never a part of the key', () => {
    expect(secretHint('sk-abcdef12')).toBe('****');
    expect(secretHint('abcd')).toBe('****');
  });
});
