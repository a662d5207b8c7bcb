/** `teamctl run PIPELINE` and `teamctl runs list | show | cancel`: pipelines of a definition file. */
import type { Command } from 'commander';
import { Option } from 'commander';
import { createConversationActivities } from '../../activities/conversation-activities.ts';
import { closestMatch } from '../../definitions/did-you-mean.ts';
import type { InputValue, PipelineDefinition } from '../../definitions/pipeline-schema.ts';
import { inputProblems } from '../../definitions/pipeline-semantics.ts';
import { LocalRunCancelled, runPipelineLocally } from '../../engine/local-engine.ts';
import type { LocalRunView } from '../../engine/local-engine.ts';
import { isLocalRunId, newLocalRunId, RunEngines, shellWord, stepKeyAt, waitingLine, waitingStep, waitingSteps } from '../../engine/run-details.ts';
import type { RunDetails, RunEngine, RunSummary } from '../../engine/run-details.ts';
import type { TemporalTarget } from '../../engine/temporal-engine.ts';
import { ToolkitError } from '../../errors/catalogue.ts';
import { DEFAULT_TASK_QUEUE, listensAt, loadTemporalSettings, temporalConfigured } from '../../temporal/settings.ts';
import { reachablePipelines } from '../../definitions/pipeline-graph.ts';
import { WaitModes } from '../../definitions/pipeline-limits.ts';
import type { WaitMode } from '../../definitions/pipeline-limits.ts';
import type { PipelineResult, PipelineRunInput } from '../../workflows/pipeline-orchestration.ts';
import { entryLine, flattenTree, isFinished, locationLabel, renderTree } from '../run-tree.ts';
import { resolveConnection } from '../context.ts';
import { loadDesired } from '../desired.ts';
import { ExitCodes, reportError, runFailureHint } from '../errors.ts';
import type { CliIo } from '../io.ts';
import { sayingWhenStopped } from '../signals.ts';
import { connectionOptions, Engines } from './plan-apply.ts';
import type { Runner } from './runner.ts';

/** Collects repeated `--input KEY=VALUE` flags. */
function collectInput(value: string, previous: string[] | undefined): string[] {
  return [...(previous ?? []), value];
}

/**
 * Turns `KEY=VALUE` pairs into typed inputs of `pipeline` (numbers and booleans parsed as the
 * pipeline declares them) and checks them: unknown names (did-you-mean), missing required
 * inputs, wrong types, a pair without `=`. Output: the inputs. Errors: `invalid_usage` listing
 * every problem; nothing has been sent then.
 */
export function parseRunInputs(pipeline: PipelineDefinition, pairs: string[]): Record<string, InputValue> {
  const inputs: Record<string, InputValue> = {};
  const problems: string[] = [];
  for (const pair of pairs) {
    const at = pair.indexOf('=');
    if (at <= 0) {
      problems.push(`--input ${JSON.stringify(pair)}: expected KEY=VALUE`);
      continue;
    }
    const name = pair.slice(0, at);
    const text = pair.slice(at + 1);
    const type = pipeline.inputs[name]?.type;
    if (type === 'number') {
      const n = Number(text);
      if (text.trim() === '' || !Number.isFinite(n)) problems.push(`--input ${name}: not a number: ${JSON.stringify(text)}`);
      else inputs[name] = n;
    } else if (type === 'boolean') {
      if (text !== 'true' && text !== 'false') problems.push(`--input ${name}: expected true or false, got ${JSON.stringify(text)}`);
      else inputs[name] = text === 'true';
    } else {
      inputs[name] = text;
    }
  }
  problems.push(...inputProblems(pipeline, inputs).map((p) => p.message));
  if (problems.length > 0) {
    // The problems name the pipeline; the hint says what it takes and how to give it.
    const declared = Object.entries(pipeline.inputs).map(([name, input]) => `${name} (${input.type}${input.default === undefined ? ', required' : `, default ${JSON.stringify(input.default)}`})`);
    const hint = declared.length ? `give each input as --input NAME=VALUE; pipeline ${pipeline.name} takes ${declared.join(', ')}` : `pipeline ${pipeline.name} takes no inputs`;
    throw new ToolkitError('invalid_usage', `${problems.join('; ')}; nothing was sent`, { hint });
  }
  return inputs;
}

/** The pipeline named `name` of a definition. Errors: `invalid_usage` with did-you-mean. */
function findPipeline(pipelines: PipelineDefinition[], name: string, file: string): PipelineDefinition {
  const pipeline = pipelines.find((p) => p.name === name);
  if (pipeline) return pipeline;
  const match = closestMatch(name, pipelines.map((p) => p.name));
  const known = pipelines.length ? `; its pipelines: ${pipelines.map((p) => p.name).join(', ')}` : '; it defines no pipelines';
  throw new ToolkitError('invalid_usage', `${file} has no pipeline named "${name}"${match ? ` (did you mean "${match}"?)` : known}`);
}

/**
 * The Temporal side of `run` and `runs`, loaded when a command needs it: Temporal's client weighs
 * 0.2–0.3 s of start-up that a local run and every other teamctl command spare.
 */
const temporalRuns = () => import('../../engine/temporal-runs.ts');

/** `teamctl run --json`'s document. */
function runDocument(runId: string, result: PipelineResult) {
  return { run_id: runId, status: result.status, output: result.output, steps: result.steps };
}

function temporalTarget(io: CliIo, taskQueue: string): TemporalTarget {
  // What a start waits for (a worker that is starting) is said, not waited out in silence.
  return { settings: loadTemporalSettings(io.env), taskQueue, onWait: (text) => io.stderr(text) };
}

/**
 * Temporal as `runs` may ask it: the target, or why it is not asked — no server is configured
 * (`TEMPORAL_ADDRESS`, `TEMPORAL_PROFILE`, `TEMPORAL_CONFIG_FILE`) and nothing listens at the
 * default address, which a client would otherwise try for 10 s before giving up. A configured
 * server is always asked (and reported `temporal_unreachable` when it does not answer).
 */
async function runsTemporal(io: CliIo): Promise<{ target: TemporalTarget } | { absent: string }> {
  const target = temporalTarget(io, DEFAULT_TASK_QUEUE);
  if (temporalConfigured(io.env) || (await listensAt(target.settings.address))) return { target };
  return { absent: `nothing listens at ${target.settings.address}, and no Temporal server is configured (TEMPORAL_ADDRESS, TEMPORAL_PROFILE or TEMPORAL_CONFIG_FILE)` };
}

/** The Temporal target of `runs show | cancel` of a Temporal run id. Errors: `temporal_unreachable` at once when Temporal is absent. */
async function temporalForRun(io: CliIo, runId: string): Promise<TemporalTarget> {
  const temporal = await runsTemporal(io);
  if ('absent' in temporal) throw new ToolkitError('temporal_unreachable', `cannot look up ${runId} on Temporal: ${temporal.absent}`);
  return temporal.target;
}

/** Codes of a run's own failures, whose hint depends on the engine (see {@link runFailureHint}). */
const RUN_FAILURES = new Set(['reply_invalid', 'loop_exhausted', 'expression_failed']);

/**
 * A run's failure with the hint of the engine it ran on (see {@link runFailureHint}), the run's
 * id and, for the local engine, the failed step's thread; other errors as they are.
 */
function withRunHint(error: unknown, engine: RunEngine, runId: string, thread: string | undefined): unknown {
  const report = reportError(error);
  const hint = RUN_FAILURES.has(report.code) ? runFailureHint(report.code, engine, runId, thread) : undefined;
  return hint ? new ToolkitError(report.code as 'reply_invalid', report.message, { hint }) : error;
}

/** `interrupted by Ctrl-C (SIGINT)`, `interrupted by SIGTERM`. */
function interruptedBy(signal: NodeJS.Signals): string {
  return signal === 'SIGINT' ? 'interrupted by Ctrl-C (SIGINT)' : `interrupted by ${signal}`;
}

/**
 * Runs a pipeline on the local engine, in this process, as `teamctl run` does: each finished entry
 * on stdout (unless `json`), and on stderr the run id and, when a step waits for a person, the
 * line that says who answers, where, and the command that answers (as the Temporal engine's
 * `run` says it). While it runs, `teamctl runs list | show | cancel` of the same user reach it
 * (engine/local-runs.ts); `runs cancel` ends it with `run_failed`. Output: the result. Errors:
 * the run's (a run failure with the local engine's hint), `run_failed` when cancelled.
 */
async function runLocally(io: CliIo, input: PipelineRunInput, runId: string, options: { json: boolean; file: string }): Promise<PipelineResult> {
  const { json } = options;
  const { publishLocalRun } = await import('../../engine/local-runs.ts');
  const stop = new AbortController();
  const startedAt = new Date();
  let view: LocalRunView | undefined;
  const details = (): RunDetails => {
    const progress = view?.progress();
    return {
      run_id: runId,
      status: progress?.status ?? 'running',
      started_at: startedAt.toISOString(),
      closed_at: null,
      engine: RunEngines.local,
      pipeline: input.pipeline.name,
      steps: progress?.steps ?? null,
      waiting: progress ? waitingSteps(progress.steps, progress.humans) : [],
      output: null,
      failure: null,
    };
  };
  const published = await publishLocalRun({ env: io.env, runId, startedAt, details, cancel: () => stop.abort(new LocalRunCancelled(`run ${runId} was cancelled (teamctl runs cancel)`)) }).catch(
    (error: unknown) => {
      // Seen or not, the run runs: only `runs` of other processes will not find it.
      io.stderr(`warning: teamctl runs will not find this run: ${(error as Error).message}`);
      return undefined;
    },
  );
  if (!json) io.stderr(`Started run ${runId} in this process (Ctrl-C ends it); teamctl runs show ${runId} shows it while it runs.`);
  const shown = new Set<string>();
  let failedThread: string | undefined;
  try {
    return await sayingWhenStopped(
      () =>
        runPipelineLocally({ ...input, runKey: runId }, createConversationActivities({ env: io.env }), {
          streamWaits: { env: io.env },
          signal: stop.signal,
          watch: (v) => (view = v),
          // A task a cancelled or timed-out step could not cancel is said as the run's other lines are.
          onWarning: (text) => io.stderr(`warning: ${text}`),
          onProgress: ({ location, step }) => {
            if (!json && isFinished(step.status)) io.stdout(`${locationLabel(location)}${entryLine(step)}`);
            if (step.status === 'failed' && step.thread_id) failedThread = step.thread_id;
            // A step that has begun to wait for a person, once per step and thread: who answers, and how.
            if (step.status !== 'running' || !step.wait_mode || !step.thread_id) return;
            const key = stepKeyAt(location, step.id);
            const waiting = waitingStep(key, step, view?.progress().humans);
            if (waiting && !shown.has(`${key}@${step.thread_id}`)) {
              shown.add(`${key}@${step.thread_id}`);
              io.stderr(waitingLine(waiting));
            }
          },
        }),
      (signal) => {
        published?.forget();
        io.stderr(`${interruptedBy(signal)}: run ${runId} ended with this process (a local run lives in it); nothing more is sent.`);
      },
    );
  } catch (error) {
    if (error instanceof LocalRunCancelled) {
      throw new ToolkitError('run_failed', `${error.message}: its waiting steps stopped, and nothing more is sent`, {
        hint: `start it again with: teamctl run ${shellWord(input.pipeline.name)} -f ${shellWord(options.file)}`,
      });
    }
    throw withRunHint(error, RunEngines.local, runId, failedThread);
  } finally {
    await published?.close();
  }
}

/** Registers `run` and `runs` on the program. */
export function registerRun(program: Command, io: CliIo, run: Runner): void {
  connectionOptions(
    program
      .command('run')
      .description('Run a pipeline of a definition file, printing each entry as it finishes, then its output: each step sends a message and waits for the reply. Inputs are checked before anything is sent.')
      .argument('<pipeline>', 'pipeline name')
      .requiredOption('-f, --file <path>', 'definition file (YAML)')
      .option('--input <key=value>', 'an input of the pipeline (repeatable)', collectInput)
      .addOption(new Option('--engine <engine>', 'where the run happens: in this process, or durably on Temporal').choices(Object.values(Engines)).default(Engines.local))
      .option('--task-queue <name>', 'Temporal task queue (engine temporal)', DEFAULT_TASK_QUEUE)
      .option('--detach', 'engine temporal: print the run id once started (and how a person answers the first step that waits for one), do not wait')
      .addOption(
        new Option('--wait-mode <mode>', "engine temporal: how waiting steps learn of replies (default: the pipeline's waitMode, else auto: push when the organization has an enabled webhook for message.created)").choices(
          Object.values(WaitModes),
        ),
      )
      .option('--json', 'print {"run_id", "status", "output", "steps"} as JSON (steps: the tree of entries)'),
  ).action(
    (name: string, opts: { file: string; input?: string[]; engine: keyof typeof Engines; taskQueue: string; detach?: boolean; waitMode?: WaitMode; json?: boolean; baseUrl?: string; apiKeyEnv?: string[] }) =>
      run(async () => {
        const definition = await loadDesired(opts.file, io.env, false);
        const pipeline = findPipeline(definition.pipelines, name, opts.file);
        const inputs = parseRunInputs(pipeline, opts.input ?? []);
        if (opts.detach && opts.engine !== Engines.temporal) throw new ToolkitError('invalid_usage', '--detach needs --engine temporal: a local run lives in this process');
        const connection = resolveConnection(opts, io.env);
        const pipelines = reachablePipelines(definition.pipelines, pipeline.name);
        const input: PipelineRunInput = {
          connection,
          organization: definition.organization.name,
          pipeline,
          ...(Object.keys(pipelines).length ? { pipelines } : {}),
          inputs,
          ...(opts.waitMode ? { waitMode: opts.waitMode } : {}),
        };
        let runId: string;
        let result: PipelineResult;
        if (opts.engine === Engines.temporal) {
          const { followPipelineRun, newRunId, pipelineRunResult, startPipelineRun, waitingForPeople } = await temporalRuns();
          const target = temporalTarget(io, opts.taskQueue);
          runId = newRunId(definition.organization.name, pipeline.name);
          await startPipelineRun(input, runId, target);
          if (opts.detach) {
            // The run id alone on stdout (scripts capture it); how a person answers, once the run waits for one.
            const waiting = await waitingForPeople(runId, target);
            if (opts.json) io.stdout(JSON.stringify({ run_id: runId, status: 'running', waiting }, null, 2));
            else {
              io.stdout(runId);
              if (waiting.length > 0) waiting.forEach((w) => io.stderr(waitingLine(w)));
              io.stderr(`Follow it with: teamctl runs show ${runId}${waiting.length ? '' : ' (it shows the thread and how to answer once a step waits for a person)'}`);
            }
            return ExitCodes.ok;
          }
          if (opts.json) result = await pipelineRunResult(runId, target).catch((error: unknown) => Promise.reject(withRunHint(error, RunEngines.temporal, runId, undefined)));
          else {
            io.stderr(`Started run ${runId}; waiting (Ctrl-C stops waiting, not the run).`);
            const printed = new Set<string>();
            const shown = new Set<string>();
            result = await followPipelineRun(runId, target, (steps, humans) => {
              for (const { label, step } of flattenTree(steps)) {
                const key = `${label}${step.id}`;
                if (isFinished(step.status) && !printed.has(key)) {
                  printed.add(key);
                  io.stdout(`${label}${entryLine(step)}`);
                }
              }
              // A step waiting for a person, once: who answers, where, and the command that answers.
              const people = new Set(waitingSteps(steps, humans).map((w) => {
                if (!shown.has(`${w.step}@${w.thread_id}`)) io.stderr(waitingLine(w));
                shown.add(`${w.step}@${w.thread_id}`);
                return w.thread_id;
              }));
              // A step waiting for an agent, once: where it waits.
              for (const { label, step } of flattenTree(steps)) {
                const key = `${label}${step.id}@${step.thread_id}`;
                if (step.status === 'running' && step.awaiting && step.thread_id && !people.has(step.thread_id) && !shown.has(key)) {
                  shown.add(key);
                  io.stderr(`${label}${entryLine(step)}`);
                }
              }
            }).catch((error: unknown) => Promise.reject(withRunHint(error, RunEngines.temporal, runId, undefined)));
          }
        } else {
          runId = newLocalRunId(definition.organization.name, pipeline.name);
          result = await runLocally(io, input, runId, { json: opts.json === true, file: opts.file });
        }
        if (opts.json) io.stdout(JSON.stringify(runDocument(runId, result), null, 2));
        else if (result.output !== null) io.stdout(`output: ${result.output}`);
        return ExitCodes.ok;
      }),
  );

  const runs = program
    .command('runs')
    .description('Pipeline runs: on Temporal, and local runs of live teamctl run processes of this user on this machine: list, show, cancel.');
  runs
    .command('list')
    .description('List pipeline runs, newest first: the local runs of live teamctl run processes (this user, this machine), then the runs on Temporal (scheduled runs included).')
    .option('--org <name>', 'only runs of this organization')
    .option('-f, --file <path>', 'only runs of the organization of this definition file')
    .option('--limit <n>', 'most runs listed', (v) => Number(v), 50)
    .option('--json', 'print the runs as JSON')
    .action((opts: { org?: string; file?: string; limit: number; json?: boolean }) =>
      run(async () => {
        const org = opts.org ?? (opts.file ? (await loadDesired(opts.file, io.env, false)).organization.name : undefined);
        const { listLocalRuns } = await import('../../engine/local-runs.ts');
        const list: RunSummary[] = (await listLocalRuns(io.env, org)).slice(0, opts.limit);
        const temporal = await runsTemporal(io);
        if ('target' in temporal) {
          const { listPipelineRuns } = await temporalRuns();
          if (list.length < opts.limit) list.push(...(await listPipelineRuns(temporal.target, org, opts.limit - list.length)));
        } else {
          // Said, not waited out: Temporal's runs are not there to list, only local ones.
          io.stderr(`Runs on Temporal are not listed: ${temporal.absent}. Local runs are listed while their teamctl run process lives.`);
        }
        if (opts.json) io.stdout(JSON.stringify({ runs: list }, null, 2));
        else if (list.length === 0) io.stdout('No pipeline runs.');
        else list.forEach((r) => io.stdout(`${r.run_id}  ${r.status}  started ${r.started_at}${r.closed_at ? `  ended ${r.closed_at}` : ''}`));
        return ExitCodes.ok;
      }),
    );
  runs
    .command('show')
    .description('Show a run as a tree: status, each entry with its thread, participants and reply (loop iterations, map items, sub-pipelines, skipped and failed entries, replies asked again), how a person answers a step that waits for one, and the output or failure. A local run is shown while its teamctl run process lives.')
    .argument('<run>', 'run id (as `run`, `run --detach` or `runs list` print it)')
    .option('--json', 'print the run as JSON')
    .action((runId: string, opts: { json?: boolean }) =>
      run(async () => {
        let details: RunDetails;
        if (isLocalRunId(runId)) details = await (await import('../../engine/local-runs.ts')).describeLocalRun(io.env, runId);
        else {
          const target = await temporalForRun(io, runId);
          details = await (await temporalRuns()).describePipelineRun(runId, target);
        }
        if (opts.json) {
          io.stdout(JSON.stringify(details, null, 2));
          return ExitCodes.ok;
        }
        io.stdout(`${details.run_id}  ${details.status}${details.pipeline ? `  pipeline ${details.pipeline}` : ''}  started ${details.started_at}${details.closed_at ? `  ended ${details.closed_at}` : ''}`);
        if (details.steps) renderTree(details.steps, '  ').forEach((line) => io.stdout(line));
        else io.stdout('  (steps unknown: no worker answered the progress query)');
        details.waiting.forEach((w) => io.stdout(waitingLine(w)));
        if (details.output !== null) io.stdout(`output: ${details.output}`);
        if (details.failure !== null) io.stdout(`failure: ${details.failure}`);
        return ExitCodes.ok;
      }),
    );
  runs
    .command('cancel')
    .description('Cancel a run: the waiting step stops and nothing more is sent. A local run is cancelled by its teamctl run process, which then ends.')
    .argument('<run>', 'run id')
    .action((runId: string) =>
      run(async () => {
        if (isLocalRunId(runId)) await (await import('../../engine/local-runs.ts')).cancelLocalRun(io.env, runId);
        else await (await temporalRuns()).cancelPipelineRun(runId, await temporalForRun(io, runId));
        io.stdout(`Cancellation of ${runId} requested.`);
        return ExitCodes.ok;
      }),
    );
}
