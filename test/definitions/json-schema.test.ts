import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { JSON_SCHEMA_PATH, buildJsonSchema } from '../../definitions/index.ts';

const EXAMPLE = fileURLToPath(new URL('../../examples/acme-research.yaml', import.meta.url));

/**
 * A validator for the generated schema. patternErrorMessage is an editor extension keyword; the
 * email and uri (a webhook's url) formats are checked loosely, as editors do (the Zod schema has
 * the strict checks).
 */
function validator() {
  // A pipeline input's value is a string, number or boolean: a union of types, which JSON Schema
  // allows and ajv's strict mode wants opted into (else it warns on every compile).
  const ajv = new Ajv({ allErrors: true, allowUnionTypes: true });
  ajv.addKeyword('patternErrorMessage');
  ajv.addFormat('email', /^[^\s@]+@[^\s@]+$/);
  ajv.addFormat('uri', /^[A-Za-z][A-Za-z0-9+.-]*:\S+$/);
  return ajv.compile(buildJsonSchema());
}

describe('definitions: JSON Schema', () => {
  it('the committed teamctl.schema.json is up to date with the Zod schema', async () => {
    const committed: unknown = JSON.parse(await readFile(JSON_SCHEMA_PATH, 'utf8'));
    expect(committed, 'definitions/teamctl.schema.json is stale: run `npm run schema`').toEqual(buildJsonSchema());
  });

  it('the JSON Schema is draft-07 for yaml-language-server', () => {
    expect(buildJsonSchema().$schema).toBe('http://json-schema.org/draft-07/schema#');
  });

  it('the example file validates against the JSON Schema', async () => {
    const validate = validator();
    const data: unknown = parse(await readFile(EXAMPLE, 'utf8'));
    expect(validate(data), JSON.stringify(validate.errors)).toBe(true);
  });

  it('the JSON Schema refuses a literal provider key and an unknown key', async () => {
    const validate = validator();
    const base = { apiVersion: 'teamctl/v1', organization: { name: 'acme' } };
    expect(validate({ ...base, organization: { name: 'acme', providerKeys: { echo: '${env:ECHO_KEY}' } } })).toBe(true);
    expect(validate({ ...base, organization: { name: 'acme', providerKeys: { echo: 'sk-1234' } } })).toBe(false);
    expect(validate({ ...base, teams: [{ name: 't', agents: [{ name: 'a', provder: 'echo' }] }] })).toBe(false);
  });

  it('the JSON Schema takes an agent\'s tools, and refuses an MCP header value without a ${env:NAME} reference', () => {
    const validate = validator();
    const withHeader = (value: string) => ({
      apiVersion: 'teamctl/v1',
      organization: { name: 'acme' },
      teams: [{ name: 't', agents: [{ name: 'a', provider: 'echo', maxSteps: 12, tools: { team: true, askTimeout: '24h', mcp: [{ name: 'tracker', url: 'https://mcp.example.com/mcp', headers: { Authorization: value } }] } }] }],
    });
    expect(validate(withHeader('Bearer ${env:TRACKER_TOKEN}')), JSON.stringify(validate.errors)).toBe(true);
    expect(validate(withHeader('Bearer s3cr3t'))).toBe(false);
    expect(validate(withHeader('Bearer ${TOKEN} ${env:TRACKER_TOKEN}'))).toBe(false);
  });
});
