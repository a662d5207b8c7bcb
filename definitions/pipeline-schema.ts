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

/** Ids of steps and names of inputs: what a template can name after `steps.` or `inputs.`. */
const Identifier = z
  .string()
  .regex(/^[A-Za-z][A-Za-z0-9_-]{0,63}$/, 'must start with a letter and hold only letters, digits, - and _ (at most 64)');

/** A Mustache template: `{{ inputs.NAME }}`, `{{ steps.ID.reply }}`, `{{ steps.ID.thread_id }}`. */
const Template = (max: number) => z.string().max(max).meta({ description: 'Text with Mustache references: {{ inputs.NAME }}, {{ steps.ID.reply }}, {{ steps.ID.thread_id }}' });

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

/** One conversation step. */
export const PipelineStepSchema = z
  .strictObject({
    id: Identifier.describe('Step id, unique in the pipeline; templates name it as steps.ID'),
    from: Name.describe('The participant who writes the message (agent or human of the team)'),
    to: Name.optional().describe('The other end: opens a thread on the edge between `from` and `to`'),
    thread: Identifier.optional().describe('Instead of `to`: continue the thread of this earlier step'),
    subject: Template(200).optional().describe('Subject of a new thread (template)'),
    content: Template(32_768).describe('The message (template), 1–32,768 characters once rendered'),
    awaitReply: z.boolean().default(true).describe('Wait for one message from the other end (default true)'),
    timeout: DurationSchema.optional().describe(`How long to wait for the reply (default ${DEFAULT_STEP_TIMEOUT})`),
  })
  .describe('A step: a message from one participant to another, and by default the wait for the reply');
export type PipelineStep = z.infer<typeof PipelineStepSchema>;

/** Steps that run at once; each sees only the steps before the group. */
export const ParallelGroupSchema = z
  .strictObject({
    parallel: z.array(PipelineStepSchema).min(1).describe('Steps run at the same time'),
  })
  .describe('A group of steps run in parallel');
export type ParallelGroup = z.infer<typeof ParallelGroupSchema>;

/** An entry of `steps`: a step or a parallel group. */
export const PipelineEntrySchema = z.union([PipelineStepSchema, ParallelGroupSchema]);
export type PipelineEntry = z.infer<typeof PipelineEntrySchema>;

/** A pipeline. */
export const PipelineDefinitionSchema = z
  .strictObject({
    name: Name.describe('Pipeline name, unique in the file; `teamctl run NAME` runs it'),
    team: Name.describe('The team whose participants converse (a team of this file)'),
    description: LongText.optional().describe('What the pipeline does (up to 4000 characters)'),
    inputs: z.record(Identifier, PipelineInputSchema).default({}).describe('Inputs by name'),
    steps: z.array(PipelineEntrySchema).min(1).describe('Steps in order; a `parallel` entry runs its steps at once'),
    output: Template(32_768).optional().describe('What the run returns (template), e.g. {{ steps.summary.reply }}'),
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
