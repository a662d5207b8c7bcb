/** `teamctl run PIPELINE` and `teamctl runs list | show | cancel`: pipelines of a definition file. */
import { randomUUID } from 'node:crypto';
import type { Command } from 'commander';
import { Option } from 'commander';
import { createConversationActivities } from '../../activities/conversation-activities.ts';
import { closestMatch } from '../../definitions/did-you-mean.ts';
import type { InputValue, PipelineDefinition } from '../../definitions/pipeline-schema.ts';
import { inputProblems } from '../../definitions/pipeline-semantics.ts';
import { runPipelineLocally } from '../../engine/local-engine.ts';
import type { RunDetails, WaitingStep } from '../../engine/temporal-runs.ts';
import type { TemporalTarget } from '../../engine/temporal-engine.ts';
import { ToolkitError } from '../../errors/catalogue.ts';
import { DEFAULT_TASK_QUEUE, loadTemporalSettings } from '../../temporal/settings.ts';
import { reachablePipelines } from '../../definitions/pipeline-graph.ts';
import { WaitModes } from '../../definitions/pipeline-limits.ts';
import type { WaitMode } from '../../definitions/pipeline-limits.ts';
import type { PipelineResult, PipelineRunInput, StepProgress } from '../../workflows/pipeline-orchestration.ts';
import { entryLine, flattenTree, isFinished, locationLabel, renderTree } from '../run-tree.ts';
import { resolveConnection } from '../context.ts';
import { loadDesired } from '../desired.ts';
import { ExitCodes } from '../errors.ts';
import type { CliIo } from '../io.ts';
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

/** How a person answers a waiting step, as one line. */
function waitingLine(waiting: WaitingStep): string {
  return `${waiting.to} answers step ${waiting.step} (thread ${waiting.thread_id}, from ${waiting.from}): ${waiting.answer_with}`;
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
          if (opts.json) result = await pipelineRunResult(runId, target);
          else {
            io.stderr(`Started run ${runId}; waiting (Ctrl-C stops waiting, not the run).`);
            const printed = new Set<string>();
            const shown = new Set<string>();
            result = await followPipelineRun(runId, target, (steps) => {
              for (const { label, step } of flattenTree(steps)) {
                const key = `${label}${step.id}`;
                if (isFinished(step.status) && !printed.has(key)) {
                  printed.add(key);
                  io.stdout(`${label}${entryLine(step)}`);
                }
              }
              // A step waiting for someone, once: where to answer.
              for (const { label, step } of flattenTree(steps)) {
                const key = `${label}${step.id}@${step.thread_id}`;
                if (step.status === 'running' && step.awaiting && step.thread_id && !shown.has(key)) {
                  shown.add(key);
                  io.stderr(`${label}${entryLine(step)}`);
                }
              }
            });
          }
        } else {
          runId = `local/${definition.organization.name}/${pipeline.name}/${randomUUID()}`;
          result = await runPipelineLocally({ ...input, runKey: runId }, createConversationActivities({ env: io.env }), {
            streamWaits: { env: io.env },
            onProgress: ({ location, step }) => {
              if (!opts.json && isFinished(step.status)) io.stdout(`${locationLabel(location)}${entryLine(step)}`);
            },
          });
        }
        if (opts.json) io.stdout(JSON.stringify(runDocument(runId, result), null, 2));
        else if (result.output !== null) io.stdout(`output: ${result.output}`);
        return ExitCodes.ok;
      }),
  );

  const runs = program.command('runs').description('Pipeline runs on Temporal: list, show, cancel.');
  runs
    .command('list')
    .description('List pipeline runs, newest first (scheduled runs included).')
    .option('--org <name>', 'only runs of this organization')
    .option('-f, --file <path>', 'only runs of the organization of this definition file')
    .option('--limit <n>', 'most runs listed', (v) => Number(v), 50)
    .option('--json', 'print the runs as JSON')
    .action((opts: { org?: string; file?: string; limit: number; json?: boolean }) =>
      run(async () => {
        const org = opts.org ?? (opts.file ? (await loadDesired(opts.file, io.env, false)).organization.name : undefined);
        const { listPipelineRuns } = await temporalRuns();
        const list = await listPipelineRuns(temporalTarget(io, DEFAULT_TASK_QUEUE), org, opts.limit);
        if (opts.json) io.stdout(JSON.stringify({ runs: list }, null, 2));
        else if (list.length === 0) io.stdout('No pipeline runs.');
        else list.forEach((r) => io.stdout(`${r.run_id}  ${r.status}  started ${r.started_at}${r.closed_at ? `  ended ${r.closed_at}` : ''}`));
        return ExitCodes.ok;
      }),
    );
  runs
    .command('show')
    .description('Show a run as a tree: status, each entry with its thread, participants and reply (loop iterations, map items, sub-pipelines, skipped and failed entries, replies asked again), how a person answers a step that waits for one, and the output or failure.')
    .argument('<run>', 'run id (as `run --detach` or `runs list` print it)')
    .option('--json', 'print the run as JSON')
    .action((runId: string, opts: { json?: boolean }) =>
      run(async () => {
        const { describePipelineRun } = await temporalRuns();
        const details: RunDetails = await describePipelineRun(runId, temporalTarget(io, DEFAULT_TASK_QUEUE));
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
    .description('Cancel a run: the waiting step stops and nothing more is sent.')
    .argument('<run>', 'run id')
    .action((runId: string) =>
      run(async () => {
        const { cancelPipelineRun } = await temporalRuns();
        await cancelPipelineRun(runId, temporalTarget(io, DEFAULT_TASK_QUEUE));
        io.stdout(`Cancellation of ${runId} requested.`);
        return ExitCodes.ok;
      }),
    );
}
