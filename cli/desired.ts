import type { Definition } from '../definitions/schema.ts';
import { desiredState } from '../plan/desired.ts';
import type { ApplyInput } from '../workflows/apply-orchestration.ts';
import { resolveConnection } from './context.ts';
import type { ConnectionFlags } from './context.ts';
import { loadDesired } from './definition-file.ts';

export { loadDesired, MAX_FILE_SIZE_ENV, parseByteSize } from './definition-file.ts';

/**
 * Builds the input of an apply (the Temporal workflow's input, recorded in its history): the
 * desired state (`plan/desired.ts`: the organization and its teams; pipelines and schedules stay
 * out, so they never enlarge the input) with secret *references* and the connection with the
 * *name* of the key's variable. Every secret is checked to resolve, but no resolved value is put in the input.
 * Errors: `invalid_definition`, `unresolved_secret`, `invalid_usage`.
 */
export async function buildApplyInput(file: string, flags: ConnectionFlags & { parallelism?: number }, env: NodeJS.ProcessEnv): Promise<ApplyInput> {
  return (await loadApplyInput(file, flags, env)).input;
}

/**
 * {@link buildApplyInput} together with the whole definition it came from (its pipelines and
 * schedules are not part of the apply workflow's input). `checkSecrets` false (destroy, which sets
 * no secret) does not require the provider keys' variables. Errors: as {@link buildApplyInput}.
 */
export async function loadApplyInput(
  file: string,
  flags: ConnectionFlags & { parallelism?: number },
  env: NodeJS.ProcessEnv,
  options: { checkSecrets?: boolean } = {},
): Promise<{ input: ApplyInput; definition: Definition }> {
  const definition = await loadDesired(file, env, options.checkSecrets ?? true);
  const connection = resolveConnection(flags, env);
  return { definition, input: { connection, desired: desiredState(definition), ...(flags.parallelism ? { parallelism: flags.parallelism } : {}) } };
}
