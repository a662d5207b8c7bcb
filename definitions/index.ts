/**
 * Definition files of teamctl: schema, loading with located problems, secret references and the
 * JSON Schema for editors.
 */
export { parseDefinition, loadDefinitionFile } from './load.ts';
export { DefinitionError, formatPath, formatProblem } from './problems.ts';
export type { DefinitionProblem, PathSegment } from './problems.ts';
export {
  API_VERSION,
  AgentDefinitionSchema,
  DefinitionSchema,
  EdgeDefinitionSchema,
  HumanDefinitionSchema,
  OrganizationDefinitionSchema,
  ProviderKeysSchema,
  TeamDefinitionSchema,
} from './schema.ts';
export type {
  AgentDefinition,
  Definition,
  EdgeDefinition,
  HumanDefinition,
  OrganizationDefinition,
  TeamDefinition,
} from './schema.ts';
export { AgentToolsDefinitionSchema, McpServerDefinitionSchema } from './agent-tools-schema.ts';
export type { AgentToolsDefinition, McpServerDefinition } from './agent-tools-schema.ts';
export {
  SECRET_REF_MESSAGE,
  SECRET_TEMPLATE_MESSAGE,
  SecretRefSchema,
  isSecretRef,
  isSecretTemplate,
  parseSecretRef,
  resolveSecret,
  resolveSecretTemplate,
  secretHint,
  secretVariable,
  templateVariables,
} from './secrets.ts';
export type { SecretRef } from './secrets.ts';
export { buildJsonSchema, renderJsonSchema, JSON_SCHEMA_PATH } from './generate-schema.ts';
