/**
 * The Zod schemas of pipelines and schedules in a definition file.
 *
 * A pipeline is a list of conversation steps run by a durable workflow: each step writes a
 * message from one participant of a team to another (opening a thread on their edge, or
 * continuing an earlier step's thread) and by default waits for the other end's reply. Steps in
 * a `parallel` group run at once. Texts are Mustache templates over `inputs` and earlier `steps`.
 * A schedule starts a pipeline on a cron expression or an interval, as a Temporal Schedule.
 *
 * Shapes only: references between fields (teams, participants, edges, steps, template names,
 * inputs of a schedule) are checked in `pipeline-semantics.ts`, with positions.
 */
import { z } from 'zod';
import { LongText, Name } from '../api/schemas.ts';
import { DEFAULT_STEP_TIMEOUT, parseDuration } from './durations.ts';
import { DEFAULT_RECONCILE_EVERY, MAX_LOOP_ITERATIONS, MAX_MAP_CONCURRENCY, MAX_MAP_ITEMS, MAX_REPLY_ATTEMPTS, MIN_RECONCILE_MS, WaitModes } from './pipeline-limits.ts';

/** Longest wait a step or a window may name: a year (Temporal timers go further, people do not). */
export const MAX_DURATION_MS = 365 * 24 * 3_600_000;

/** A duration: a number and a unit (`30s`, `10m`, `2h`, `7d`), positive, at most a year. */
export const DurationSchema = z
  .string()
  .refine((text) => {
    const value = parseDuration(text);
    return value !== undefined && value <= MAX_DURATION_MS;
  }, 'must be a duration such as 30s, 10m, 2h or 7d (positive, at most 365d)')
  .meta({ description: 'A duration: a number and a unit, e.g. 30s, 10m, 2h, 7d', examples: ['10m', '2h', '7d'] });

/** `reconcileEvery`: a duration of at least 10 s (each read costs the run a few history events). */
const ReconcileEverySchema = DurationSchema.refine((text) => (parseDuration(text) ?? 0) >= MIN_RECONCILE_MS, `must be at least ${MIN_RECONCILE_MS / 1000}s`).describe(
  `While a step waits by push: how often the run reads its thread anyway, in case a webhook delivery was lost (default ${DEFAULT_RECONCILE_EVERY}, at least ${MIN_RECONCILE_MS / 1000}s)`,
);

/** Ids of steps and names of inputs: what a template can name after `steps.` or `inputs.`. */
const Identifier = z
  .string()
  .regex(/^[A-Za-z][A-Za-z0-9_-]{0,63}$/, 'must start with a letter and hold only letters, digits, - and _ (at most 64)');

/** A Mustache template: `{{ inputs.NAME }}`, `{{ steps.ID.reply }}`, `{{ steps.ID.thread_id }}`, `{{ steps.ID.task_id }}`. */
const Template = (max: number) => z.string().max(max).meta({ description: 'Text with Mustache references: {{ inputs.NAME }}, {{ steps.ID.reply }}, {{ steps.ID.value.FIELD }}, {{ steps.ID.thread_id }}, {{ iteration }}, {{ item }}' });

/** The types an input may have. */
export const InputTypes = ['string', 'number', 'boolean'] as const;
export type InputType = (typeof InputTypes)[number];

/** A value of an input. */
export const InputValueSchema = z.union([z.string(), z.number(), z.boolean()]);
export type InputValue = z.infer<typeof InputValueSchema>;

/** An input of a pipeline: required unless it has a default. */
export const PipelineInputSchema = z
  .strictObject({
    type: z.enum(InputTypes).default('string').describe('string (default), number or boolean'),
    default: InputValueSchema.optional().describe('Value when the run does not give one; without it the input is required'),
    description: LongText.optional().describe('What the input means (up to 4000 characters)'),
  })
  .describe('An input of the pipeline');
export type PipelineInput = z.infer<typeof PipelineInputSchema>;

/** What a failure of an entry does: fail the run (default), or mark the entry failed and go on. */
export const OnErrorModes = ['fail', 'continue'] as const;
export type OnErrorMode = (typeof OnErrorModes)[number];


/**
 * A CEL expression (https://cel.dev) over `inputs`, `steps`, `iteration` and the item of a map;
 * `examples` (for editors and docs/definitions.md) are conditions unless the key wants another type.
 */
const Expression = (description: string, examples: readonly string[] = ["steps.classify.value.urgent", "steps.verdict.value == 'approve'"]) =>
  z.string().trim().min(1).max(4_096).meta({ description, examples: [...examples] });

/** The keys every entry may have: a condition and what a failure does. */
const EntryOptions = {
  when: Expression('CEL condition: the entry runs only when it is true, and is skipped (status skipped) otherwise').optional(),
  // No default written into the parsed definition: runs pin it, and schedules compare it by hash.
  onError: z.enum(OnErrorModes).optional().describe('fail (the default): a failure fails the run; continue: the entry is marked failed (steps.ID.error) and the run goes on'),
};

/**
 * A typed reply: the JSON Schema (2020-12) the reply must satisfy, and how many replies to try.
 * The schema itself is compiled by `validate` (`reply-schema.ts`), not by Zod.
 */
export const ReplySpecSchema = z
  .strictObject({
    schema: z
      .record(z.string(), z.unknown())
      .describe('JSON Schema (2020-12) the reply must satisfy; parsed from the whole message or its first ```json block (a bare word for a schema of strings only)'),
    attempts: z
      .number()
      .int()
      .min(1)
      .max(MAX_REPLY_ATTEMPTS)
      .default(3)
      .describe(`Replies tried in all, the first included (1–${MAX_REPLY_ATTEMPTS}, default 3); a reply that does not fit is answered with what is wrong, in the same thread`),
  })
  .describe('A typed reply: the schema the reply must satisfy and how many replies to try');
export type ReplySpec = z.infer<typeof ReplySpecSchema>;

/** One conversation step. */
export const PipelineStepSchema = z
  .strictObject({
    id: Identifier.describe('Step id, unique in the pipeline; templates and expressions name it as steps.ID'),
    from: Name.describe('The participant who writes the message (agent or human of the team)'),
    to: Name.optional().describe('The other end: opens a thread on the edge between `from` and `to`'),
    thread: Identifier.optional().describe('Instead of `to`: continue the thread of this earlier step'),
    subject: Template(200).optional().describe('Subject of a new thread (template)'),
    content: Template(32_768).describe('The message (template), 1–32,768 characters once rendered'),
    awaitReply: z.boolean().default(true).describe('Wait for one message from the other end (default true)'),
    timeout: DurationSchema.optional().describe(`How long to wait for each reply (default ${DEFAULT_STEP_TIMEOUT})`),
    reply: ReplySpecSchema.optional().describe('A typed reply: the reply must satisfy a JSON Schema; steps.ID.value is the parsed value'),
    // No default written into the parsed definition: runs pin it, and schedules compare it by hash.
    task: z
      .boolean()
      .optional()
      .describe('Ask through a task (a unit of work, with its state and artifacts, as Agent2Agent defines it) instead of a message: a task on the edge between `from` (requester) and `to` (assignee), the content its text and the subject its title; the step waits until the task is final, and its reply is the text of the task\'s artifacts (steps.ID.task_id names the task)'),
    reconcileEvery: ReconcileEverySchema.optional(),
    ...EntryOptions,
  })
  .describe('A step: a message from one participant to another, and by default the wait for the reply');
export type PipelineStep = z.infer<typeof PipelineStepSchema>;

/** Steps that run at once; each sees only the entries before the group. */
export const ParallelGroupSchema = z
  .strictObject({
    parallel: z.array(PipelineStepSchema).min(1).describe('Steps run at the same time'),
    ...EntryOptions,
  })
  .describe('A group of steps run in parallel');
export type ParallelGroup = z.infer<typeof ParallelGroupSchema>;

/** The body of a loop, run until a condition holds or the iterations run out. */
export interface LoopBody {
  id: string;
  maxIterations: number;
  until?: string | undefined;
  steps: PipelineEntry[];
}
/** The body of a map: the same entries run once per item of a list. */
export interface MapBody {
  id: string;
  items: string;
  as: string;
  maxConcurrency: number;
  steps: PipelineEntry[];
}
/** A sub-pipeline run. */
export interface RunBody {
  id: string;
  pipeline: string;
  inputs: Record<string, InputValue>;
}
/** A pause. */
export interface SleepBody {
  id: string;
  for: string;
}
/** What every entry other than a step has beside its body: a condition and what a failure does. */
interface EntryOptionsShape {
  when?: string | undefined;
  onError?: OnErrorMode | undefined;
}
export type LoopEntry = EntryOptionsShape & { loop: LoopBody };
export type MapEntry = EntryOptionsShape & { map: MapBody };
export type RunEntry = EntryOptionsShape & { run: RunBody };
export type SleepEntry = EntryOptionsShape & { sleep: SleepBody };

/** An entry of `steps`: a step, a parallel group, a loop, a map, a sub-pipeline or a sleep. */
export type PipelineEntry = PipelineStep | ParallelGroup | LoopEntry | MapEntry | RunEntry | SleepEntry;

/**
 * Names CEL keeps for itself or for the pipeline (`inputs`, `steps`, `iteration`): a map's `as`
 * may not be one of them.
 */
export const RESERVED_VARIABLE_NAMES = ['inputs', 'steps', 'iteration', 'true', 'false', 'null', 'in', 'as', 'break', 'const', 'continue', 'else', 'for', 'function', 'if', 'import', 'let', 'loop', 'package', 'namespace', 'return', 'var', 'void', 'while'] as const;

/** The name of the item variable of a map: a CEL identifier other than the reserved ones. */
const VariableName = z
  .string()
  .regex(/^[A-Za-z_][A-Za-z0-9_]{0,63}$/, 'must be a CEL identifier: a letter or _, then letters, digits and _ (at most 64)')
  .refine((name) => !(RESERVED_VARIABLE_NAMES as readonly string[]).includes(name), `must not be one of ${RESERVED_VARIABLE_NAMES.slice(0, 3).join(', ')} or a CEL reserved word`);

/** The entries of a body (a loop's, a map's): at least one. */
const Body = (description: string) => z.array(z.lazy((): z.ZodType<PipelineEntry> => PipelineEntrySchema as z.ZodType<PipelineEntry>)).min(1).describe(description);

/** A loop: its body runs, then `until` is evaluated; it ends when `until` holds. */
export const LoopEntrySchema = z
  .strictObject({
    loop: z
      .strictObject({
        id: Identifier.describe('Loop id, unique in the pipeline (steps.ID: status, error, iterations)'),
        maxIterations: z.number().int().min(1).max(MAX_LOOP_ITERATIONS).describe(`Most iterations (1–${MAX_LOOP_ITERATIONS}); past them without \`until\` holding, the loop fails with loop_exhausted`),
        until: Expression('CEL condition evaluated after each iteration: the loop ends when it is true (without it, the loop runs maxIterations times)').optional(),
        steps: Body('The body: entries run in each iteration; a step with `to` opens its thread in the first iteration and continues it in the later ones'),
      })
      .describe('The loop: its id, its bound, its condition and its body'),
    ...EntryOptions,
  })
  .describe('A loop: the body runs again until a condition holds');

/** A map: the body runs once per item of a list, with its own threads. */
export const MapEntrySchema = z
  .strictObject({
    map: z
      .strictObject({
        id: Identifier.describe('Map id, unique in the pipeline (steps.ID.results: one entry per item, of its steps)'),
        items: Expression(`CEL expression yielding the list of items (at most ${MAX_MAP_ITEMS.toLocaleString('en-US')})`, ['steps.plan.value.files', "['eu', 'us', 'apac']"]),
        as: VariableName.default('item').describe('Name of the item in expressions and templates (default item)'),
        maxConcurrency: z.number().int().min(1).max(MAX_MAP_CONCURRENCY).default(4).describe(`Items run at once (1–${MAX_MAP_CONCURRENCY}, default 4)`),
        steps: Body('The body: entries run for each item, with threads of their own'),
      })
      .describe('The map: its id, its list, the item name, the concurrency and its body'),
    ...EntryOptions,
  })
  .describe('A map: the body runs once per item of a list');

/** A sub-pipeline: another pipeline of the file, run with inputs. */
export const RunEntrySchema = z
  .strictObject({
    run: z
      .strictObject({
        id: Identifier.describe('Entry id, unique in the pipeline; steps.ID.value is the sub-pipeline\'s output'),
        pipeline: Name.describe('The pipeline to run (another pipeline of this file)'),
        inputs: z
          .record(Identifier, z.union([Template(32_768), z.number(), z.boolean()]))
          .default({})
          .describe('Inputs of the sub-pipeline; strings are templates, turned into the input\'s type once rendered'),
      })
      .describe('The sub-pipeline: its id, the pipeline and its inputs'),
    ...EntryOptions,
  })
  .describe('A sub-pipeline: another pipeline of the file, run as a child workflow');

/** A pause of the run. */
export const SleepEntrySchema = z
  .strictObject({
    sleep: z
      .strictObject({
        id: Identifier.describe('Entry id, unique in the pipeline'),
        for: DurationSchema.describe('How long to pause (a durable timer on Temporal)'),
      })
      .describe('The pause: its id and its length'),
    ...EntryOptions,
  })
  .describe('A sleep: the run pauses, durably');

/** An entry of `steps`: a step, a parallel group, a loop, a map, a sub-pipeline or a sleep. */
export const PipelineEntrySchema: z.ZodType<PipelineEntry> = z
  .union([PipelineStepSchema, ParallelGroupSchema, LoopEntrySchema, MapEntrySchema, RunEntrySchema, SleepEntrySchema])
  .meta({ id: 'PipelineEntry' }) as unknown as z.ZodType<PipelineEntry>;

/** A pipeline. */
export const PipelineDefinitionSchema = z
  .strictObject({
    name: Name.describe('Pipeline name, unique in the file; `teamctl run NAME` runs it'),
    team: Name.describe('The team whose participants converse (a team of this file)'),
    description: LongText.optional().describe('What the pipeline does (up to 4000 characters)'),
    inputs: z.record(Identifier, PipelineInputSchema).default({}).describe('Inputs by name'),
    steps: z.array(PipelineEntrySchema).min(1).describe('Entries in order: steps, and `parallel`, `loop`, `map`, `run` and `sleep` entries'),
    output: Template(32_768).optional().describe('What the run returns (template), e.g. {{ steps.summary.reply }} or {{ steps.verdict.value }}'),
    waitMode: z
      .enum(WaitModes)
      .optional()
      .describe('On Temporal, how waiting steps learn of replies: push (webhook to teamctl worker --events-listen, and reads every reconcileEvery), poll (an activity long-polls), auto (the default: push when the organization has an enabled webhook for message.created)'),
    reconcileEvery: ReconcileEverySchema.optional(),
  })
  .describe('A pipeline: conversation steps run durably by a workflow');
export type PipelineDefinition = z.infer<typeof PipelineDefinitionSchema>;

/** Temporal's overlap policies of a schedule, in the definition's spelling. */
export const OverlapPolicies = ['skip', 'buffer_one', 'buffer_all', 'cancel_other', 'terminate_other', 'allow_all'] as const;
export type OverlapPolicy = (typeof OverlapPolicies)[number];

/** A scheduled run of a pipeline (a Temporal Schedule). */
export const ScheduleDefinitionSchema = z
  .strictObject({
    name: Name.regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'must hold only letters, digits, ., - and _').describe('Schedule name, unique in the file'),
    pipeline: Name.describe('The pipeline to run (a pipeline of this file)'),
    description: LongText.optional().describe('What the schedule is for (up to 4000 characters)'),
    cron: z.string().trim().min(1).max(200).optional().describe('Cron expression (5 fields, or @daily and the like); or give `every`'),
    every: DurationSchema.optional().describe('Interval instead of `cron`, e.g. 15m'),
    timezone: z.string().trim().min(1).max(100).default('UTC').describe('IANA time zone of the cron expression (default UTC)'),
    overlap: z.enum(OverlapPolicies).default('skip').describe('What happens when a run is due while the last one still runs (default skip)'),
    catchupWindow: DurationSchema.optional().describe('How late a missed run may still start (e.g. after an outage)'),
    paused: z.boolean().default(false).describe('Created paused, or paused by apply'),
    inputs: z.record(z.string(), InputValueSchema).default({}).describe('Inputs of each run'),
  })
  .describe('A schedule that runs a pipeline');
export type ScheduleDefinition = z.infer<typeof ScheduleDefinitionSchema>;
