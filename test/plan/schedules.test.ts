import { describe, expect, it } from 'vitest';
import { parseDefinition } from '../../definitions/index.ts';
import { canonicalJson, diffSchedules, onlyPausedChanges, UNKNOWN } from '../../plan/schedules.ts';
import type { DesiredSchedule, ObservedSchedule, ScheduleDocument } from '../../plan/schedules.ts';
import { desiredSchedules, scheduleNameOf } from '../../temporal/schedules.ts';

const document: ScheduleDocument = {
  pipeline: 'sweep',
  pipelineDigest: 'abc123abc123',
  description: null,
  cron: '0 2 * * *',
  every: null,
  timezone: 'Europe/Berlin',
  overlap: 'skip',
  catchupWindow: '1h',
  inputs: { ticket: 'nightly' },
  taskQueue: 'teamctl',
  connection: { baseUrl: 'http://127.0.0.1:8080', apiKeyEnv: 'ACS_API_KEY' },
};

const desired = (name: string, extra: Partial<DesiredSchedule> = {}): DesiredSchedule => ({ name, id: `teamctl/acme/${name}`, hash: `h-${name}`, document, paused: false, ...extra });
const live = (name: string, extra: Partial<ObservedSchedule> = {}): ObservedSchedule => ({ name, id: `teamctl/acme/${name}`, hash: `h-${name}`, document, paused: false, ...extra });

describe('schedules plan', () => {
  it('schedules plan: a schedule in the file and not on Temporal is created, with its document and paused state', () => {
    expect(diffSchedules([desired('nightly', { paused: true })], [])).toEqual([
      { action: 'create', kind: 'schedule', name: 'nightly', address: 'schedule/nightly', id: 'teamctl/acme/nightly', fields: { ...document, paused: true } },
    ]);
  });

  it('schedules plan: a schedule with the same hash and paused state is left alone', () => {
    expect(diffSchedules([desired('nightly')], [live('nightly')])).toEqual([]);
  });

  it('schedules plan: a changed hash is an update listing the fields that differ, live value to desired value', () => {
    const changed = { ...document, cron: '0 3 * * *', inputs: { ticket: 'late' } };
    const [change] = diffSchedules([desired('nightly', { hash: 'h-new', document: changed })], [live('nightly')]);
    expect(change).toEqual({
      action: 'update',
      kind: 'schedule',
      name: 'nightly',
      address: 'schedule/nightly',
      id: 'teamctl/acme/nightly',
      diff: { cron: { from: '0 2 * * *', to: '0 3 * * *' }, inputs: { from: { ticket: 'nightly' }, to: { ticket: 'late' } } },
    });
    expect(onlyPausedChanges(change!)).toBe(false);
  });

  it('schedules plan: a schedule paused by hand is set back as the file says, as an update of paused only', () => {
    const [change] = diffSchedules([desired('nightly')], [live('nightly', { paused: true })]);
    expect(change).toEqual({ action: 'update', kind: 'schedule', name: 'nightly', address: 'schedule/nightly', id: 'teamctl/acme/nightly', diff: { paused: { from: true, to: false } } });
    expect(onlyPausedChanges(change!)).toBe(true);
  });

  it('schedules plan: a schedule on Temporal that the file no longer names is deleted, after creates and updates, by name', () => {
    const changes = diffSchedules([desired('b-new')], [live('z-old'), live('a-old')]);
    expect(changes.map((c) => `${c.action} ${c.name}`)).toEqual(['create b-new', 'delete a-old', 'delete z-old']);
  });

  it('schedules plan: a schedule that carries no document (made by hand) is updated with every field shown as unknown', () => {
    const [change] = diffSchedules([desired('nightly')], [live('nightly', { hash: null, document: null })]);
    expect(change?.action).toBe('update');
    expect(change?.diff?.['cron']).toEqual({ from: UNKNOWN, to: '0 2 * * *' });
  });

  it('schedules plan: a hash that differs with equal documents is an update of the hash', () => {
    const [change] = diffSchedules([desired('nightly', { hash: 'h2' })], [live('nightly', { hash: 'h1' })]);
    expect(change?.diff).toEqual({ hash: { from: 'h1', to: 'h2' } });
  });

  it('canonicalJson: equal objects give the same text whatever the order of their keys', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { y: 2, x: 1 }], c: null } })).toBe(canonicalJson({ a: { c: null, d: [1, { x: 1, y: 2 }] }, b: 1 }));
  });
});

describe('schedules desired', () => {
  const text = (extra: string, step = 'Classify {{ inputs.ticket }}') =>
    [
      'apiVersion: teamctl/v1',
      'organization:',
      '  name: acme',
      'teams:',
      '  - name: intake',
      '    agents: [{ name: triager }]',
      '    humans: [{ name: dana }]',
      '    edges: [[dana, triager]]',
      'pipelines:',
      '  - name: sweep',
      '    team: intake',
      '    inputs: { ticket: { type: string } }',
      `    steps: [{ id: classify, from: dana, to: triager, content: "${step}" }]`,
      'schedules:',
      '  - name: nightly',
      '    pipeline: sweep',
      '    inputs: { ticket: nightly }',
      extra,
      '',
    ].join('\n');
  const connection = { baseUrl: 'http://127.0.0.1:8080', apiKeyEnv: 'ACS_API_KEY' };
  const plannedOf = (extra: string, step?: string, taskQueue = 'teamctl') => desiredSchedules(parseDefinition(text(extra, step), 'x.yaml'), connection, taskQueue)[0]!;

  it('schedules desired: a cron schedule starts pipelineWorkflow under teamctl-run/<org>/<name> with the pipeline as the file has it', () => {
    const planned = plannedOf('    cron: "0 2 * * *"\n    timezone: Europe/Berlin\n    overlap: buffer_one\n    catchupWindow: 1h');
    expect(planned.id).toBe('teamctl/acme/nightly');
    expect(planned.options.spec).toEqual({ cronExpressions: ['0 2 * * *'], timezone: 'Europe/Berlin' });
    expect(planned.options.policies).toEqual({ overlap: 'BUFFER_ONE', catchupWindow: 3_600_000 });
    expect(planned.options.action).toMatchObject({ workflowId: 'teamctl-run/acme/nightly', taskQueue: 'teamctl' });
    const [input] = planned.options.action.args as [{ organization: string; pipeline: { name: string }; inputs: unknown; runKey?: string }];
    expect(input).toMatchObject({ organization: 'acme', pipeline: { name: 'sweep' }, inputs: { ticket: 'nightly' }, connection });
    expect(input.runKey).toBeUndefined();
  });

  it('schedules desired: an interval schedule becomes an interval in milliseconds', () => {
    expect(plannedOf('    every: 15m').options.spec).toEqual({ intervals: [{ every: 900_000 }], timezone: 'UTC' });
  });

  it('schedules desired: the hash is stable, changes with the pipeline\'s steps and the task queue, and not with paused', () => {
    const base = plannedOf('    every: 15m');
    expect(plannedOf('    every: 15m').hash).toBe(base.hash);
    expect(plannedOf('    every: 15m\n    paused: true').hash).toBe(base.hash);
    expect(plannedOf('    every: 15m', 'Sort {{ inputs.ticket }}').hash).not.toBe(base.hash);
    expect(plannedOf('    every: 15m', undefined, 'other').hash).not.toBe(base.hash);
  });

  it('scheduleNameOf: only ids directly under the organization\'s prefix are its schedules', () => {
    expect(scheduleNameOf('teamctl/acme/nightly', 'acme')).toBe('nightly');
    expect(scheduleNameOf('teamctl/acme/sub/nightly', 'acme')).toBeUndefined();
    expect(scheduleNameOf('teamctl/acme-2/nightly', 'acme')).toBeUndefined();
  });
});
