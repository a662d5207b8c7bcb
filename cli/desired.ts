import { loadDefinitionFile } from '../definitions/load.ts';
import { resolveSecret } from '../definitions/secrets.ts';
import type { Definition } from '../definitions/schema.ts';
import type { DesiredState } from '../plan/types.ts';

/**
 * Loads a definition file as the desired state. With `checkSecrets`, every `${env:NAME}` it
 * references must be set, so an apply fails before its first request rather than halfway.
 * Errors: `invalid_definition` (with `FILE:LINE:COL` lines), `unresolved_secret`.
 */
export async function loadDesired(file: string, env: NodeJS.ProcessEnv, checkSecrets: boolean): Promise<DesiredState> {
  const definition: Definition = await loadDefinitionFile(file);
  if (checkSecrets) {
    for (const ref of Object.values(definition.organization.providerKeys ?? {})) {
      if (ref) resolveSecret(ref, env);
    }
  }
  return definition as DesiredState;
}
