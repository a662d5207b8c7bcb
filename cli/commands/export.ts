/** `teamctl export`: writes the definition of an existing organization. */
import { writeFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { Document, isScalar, isSeq, visit } from 'yaml';
import { createApplyActivities } from '../../activities/apply-activities.ts';
import { parseDefinition } from '../../definitions/load.ts';
import { ToolkitError } from '../../errors/catalogue.ts';
import { desiredState } from '../../plan/desired.ts';
import { exportDefinition } from '../../plan/export.ts';
import { A2A_HEADERS } from '../../plan/remote-a2a.ts';
import type { ExportedSchedules } from '../../temporal/schedules.ts';
import { DEFAULT_TASK_QUEUE } from '../../temporal/settings.ts';
import { readObserved } from '../../workflows/apply-orchestration.ts';
import { keyringClient, resolveConnection } from '../context.ts';
import type { ConnectionFlags } from '../context.ts';
import { ExitCodes } from '../errors.ts';
import type { CliIo } from '../io.ts';
import { connectionOptions } from './plan-apply.ts';
import type { Runner } from './runner.ts';
import { temporalConfigured, withTemporalSchedules } from '../schedule-plan.ts';
import { findOrganizations } from '../team-lookup.ts';

/** The YAML text of an exported definition: edges as `[a, b]`, names such as `007` quoted so they stay strings. */
export function exportYaml(definition: Record<string, unknown>, header: string[]): string {
  const doc = new Document(definition);
  visit(doc, {
    Pair(_key, pair) {
      if (isScalar(pair.key) && pair.key.value === 'edges' && isSeq(pair.value)) for (const edge of pair.value.items) if (isSeq(edge)) edge.flow = true;
    },
  });
  doc.commentBefore = header.map((line) => ` ${line}`).join('\n');
  return doc.toString({ lineWidth: 0, flowCollectionPadding: false });
}

/**
 * The organization's schedules and the pipelines they run, read from Temporal when one is
 * configured (`TEMPORAL_ADDRESS`, `TEMPORAL_PROFILE` or `TEMPORAL_CONFIG_FILE`, as `plan` asks
 * it then too); undefined, with a warning, when it does not answer, and when none is configured.
 */
async function readSchedulesToExport(organization: string, io: CliIo): Promise<ExportedSchedules | undefined> {
  if (!temporalConfigured(io.env)) return undefined;
  try {
    return await withTemporalSchedules(io.env, (client, { exportSchedules }) => exportSchedules(client, organization));
  } catch (error) {
    if (!(error instanceof ToolkitError && error.code === 'temporal_unreachable')) throw error;
    io.stderr(`warning: schedules not exported: ${error.message}`);
    return undefined;
  }
}

/**
 * Registers `teamctl export --org NAME [-o FILE]`: reads the organization (by name, among those
 * the key reaches) with its provider keys and every team's graph — and, when Temporal is
 * configured, its schedules with the pipelines they run — and writes a definition such
 * that `plan` on it, with the provider keys' variables set, shows no change (see
 * `plan/export.ts`). The variables it chose for the provider keys, webhook secrets and agents' MCP
 * header values are listed on stderr. The
 * output is checked as `validate` would before it is written. Errors: `name_not_found` (no
 * organization of that name, with a did-you-mean), `invalid_definition` (the live state holds something a definition cannot say,
 * such as a model on an agent without a provider), the service's.
 */
export function registerExport(program: Command, io: CliIo, run: Runner): void {
  connectionOptions(
    program
      .command('export')
      .description('Write a definition of an existing organization (teams, agents with their tools, humans, edges, webhooks; provider keys, webhook secrets and MCP header values as ${env:…} references; with Temporal configured, its schedules and their pipelines): plan on it shows no change.')
      .requiredOption('--org <name>', 'the organization to export')
      .option('-o, --output <file>', 'write the definition to FILE (default: stdout)'),
  ).action((opts: ConnectionFlags & { org: string; output?: string }) =>
    run(async () => {
      const connection = resolveConnection(opts, io.env);
      const observed = await readObserved(createApplyActivities({ env: io.env }), connection, desiredState({ organization: { name: opts.org }, teams: [] }), undefined, false);
      const organization = observed.organization;
      // findOrganizations says which organization was meant (did-you-mean) when none of that name is reachable.
      if (!organization) await findOrganizations(keyringClient(connection, io.env), opts.org);
      if (!organization) throw new ToolkitError('name_not_found', `no organization named "${opts.org}" is reachable with this key`);
      const { definition, providerKeys, webhooks, toolHeaders } = exportDefinition({ ...observed, organization });
      const header = [`teamctl definition of organization ${opts.org}, exported from ${connection.baseUrl}.`];
      if (providerKeys.length > 0) header.push(`Provider keys are references: set ${providerKeys.map((k) => k.variable).join(', ')} before plan or apply.`);
      if (webhooks.length > 0) header.push(`Webhook secrets are references: set ${webhooks.map((w) => w.variable).join(', ')} (plan compares each with the live secret; apply rotates one that differs).`);
      if (toolHeaders.length > 0) header.push(`Agents' MCP (and A2A) header values are references: set ${toolHeaders.map((h) => h.variable).join(', ')} (plan compares each with the live value; apply sets one that differs).`);
      const scheduled = await readSchedulesToExport(opts.org, io);
      if (scheduled && scheduled.schedules.length > 0) {
        Object.assign(definition, { pipelines: scheduled.pipelines, schedules: scheduled.schedules });
        const queues = scheduled.taskQueues.filter((q) => q !== DEFAULT_TASK_QUEUE);
        if (queues.length > 0) header.push(`Its schedules' runs go to task queue ${queues.join(', ')}: plan and apply it with --task-queue ${queues[0]}.`);
      }
      const text = exportYaml(definition, header);
      // What is written must be a definition `plan` accepts: say so now rather than at the next plan.
      parseDefinition(text, opts.output ?? `export of ${opts.org}`);
      if (opts.output) await writeFile(opts.output, text);
      else io.stdout(text);
      for (const key of providerKeys) io.stderr(`export: provider key ${key.provider}: set ${key.variable} to the key (the live one ends in ${key.keyHint})`);
      for (const hook of webhooks) {
        io.stderr(`export: webhook ${hook.name}: set ${hook.variable} to its secret (whsec_…; a different one is rotated in by the next apply)${hook.named ? '; it had no name: the next apply gives it this one' : ''}`);
      }
      for (const h of toolHeaders) {
        const of = h.server === A2A_HEADERS ? 'the remote A2A agent' : `MCP server ${h.server}`;
        io.stderr(`export: agent ${h.team}/${h.agent}: set ${h.variable} to the value of header ${h.header} of ${of} (the service shows only a fingerprint of it; a different value is set by the next apply)`);
      }
      for (const name of scheduled?.skipped ?? []) io.stderr(`export: schedule ${name} was not made by teamctl apply (no teamctl memo): left out`);
      if (opts.output) io.stderr(`export: wrote ${opts.output}`);
      return ExitCodes.ok;
    }),
  );
}
