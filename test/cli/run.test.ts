/** `teamctl run` and `runs`: what is refused before anything is sent or started. */
import { describe, expect, it } from 'vitest';
import { runCli } from '../../cli/program.ts';
import type { CliIo } from '../../cli/io.ts';

const example = new URL('../../examples/triage.yaml', import.meta.url).pathname;

/** Runs teamctl in-process against a service address nothing listens on: any request would fail loudly. */
async function teamctl(args: string[]): Promise<{ code: number; out: string }> {
  let out = '';
  const io: CliIo = {
    stdout: (t) => void (out += `${t}\n`),
    stderr: (t) => void (out += `${t}\n`),
    env: { ACS_BASE_URL: 'http://127.0.0.1:9', ACS_API_KEY: 'acs_org_unused', TEMPORAL_ADDRESS: '127.0.0.1:9' },
    isTTY: false,
  };
  return { code: await runCli(args, io), out };
}

describe('run', () => {
  it('run: an unknown pipeline is refused with did-you-mean and the pipelines of the file', async () => {
    const { code, out } = await teamctl(['run', 'triag', '-f', example, '--input', 'ticket=x']);
    expect(code).toBe(1);
    expect(out).toContain(`error[invalid_usage]: ${example} has no pipeline named "triag" (did you mean "triage"?)`);
  });

  it('run: --detach on the local engine is refused, since a local run lives in the CLI process', async () => {
    const { code, out } = await teamctl(['run', 'triage', '-f', example, '--input', 'ticket=x', '--detach']);
    expect(code).toBe(1);
    expect(out).toContain('--detach needs --engine temporal');
  });

  it('run: inputs are checked before the service is contacted', async () => {
    const { code, out } = await teamctl(['run', 'triage', '-f', example, '--input', 'priority=high']);
    expect(code).toBe(1);
    // The pipeline named once, and a hint saying how inputs are given and which there are.
    expect(out).toContain(
      'error[invalid_usage]: missing required input "ticket" of pipeline triage; nothing was sent\nhint: give each input as --input NAME=VALUE; pipeline triage takes ticket (string, required), priority (string, default "normal")',
    );
    expect(out).not.toContain('network_error');
  });

  it('runs show: an unreachable Temporal is reported as temporal_unreachable with its hint', async () => {
    const { code, out } = await teamctl(['runs', 'show', 'teamctl-run/x/y/z']);
    expect(code).toBe(1);
    expect(out).toContain('error[temporal_unreachable]');
    expect(out).toContain('hint: start one with `npm run temporal:dev`');
  });
});
