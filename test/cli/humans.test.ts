/**
 * `teamctl humans invite` against a real acs-server, in-process through `runCli`: the printed
 * URL is a working one-time sign-in link of the console (contract §10).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AcsClient } from '../../client/acs-client.ts';
import { linkTtlSeconds } from '../../cli/commands/humans.ts';
import { startServer } from '../../service/index.ts';
import { runTeamctl } from '../support/cli.ts';
import { signInWithLink } from '../support/sign-in-link.ts';

let server: Awaited<ReturnType<typeof startServer>>;
let apiKey: string;
let danaId: string;

const teamctl = (args: string[]) => runTeamctl(args, { ACS_BASE_URL: server.url, ACS_API_KEY: apiKey });

/** Signs in with a link as a browser does (its page, then its button); output: whether a session cookie was set. */
async function signsIn(url: string): Promise<boolean> {
  return /^acs_session=acs_session_/.test((await signInWithLink(url)).cookie ?? '');
}

beforeAll(async () => {
  server = await startServer({ inMemory: true, port: 0, tickMs: 60_000, logger: false });
  const org = await server.provisionOrganization('cli-humans');
  apiKey = org.api_key;
  const client = new AcsClient({ baseUrl: server.url, apiKey });
  const team = await client.createTeam(org.org_id, { team_name: 'support' });
  danaId = (await client.createHuman(team.team_id, { name: 'dana', email: 'dana@example.com' })).human_id;
  await client.createAgent(team.team_id, { name: 'triager' });
});
afterAll(async () => {
  await server?.close();
});

describe('teamctl humans invite', () => {
  it('humans invite: prints only the link on stdout (its expiry on stderr); the link signs dana in once', async () => {
    const result = await teamctl(['humans', 'invite', 'dana', '--team', 'support']);
    expect(result.code, result.stderr).toBe(0);
    const url = result.stdout.trim();
    expect(url).toMatch(new RegExp(`^${server.url}/sign-in/link\\?token=acs_signin_[0-9A-Za-z]{40}$`));
    expect(result.stderr).toContain('Sign-in link for dana of team support: it works once, until 20');
    expect(await signsIn(url)).toBe(true);
    expect(await signsIn(url)).toBe(false);
  });

  it('humans invite --json --ttl 7d: the link, its expiry a week ahead and the human', async () => {
    const result = await teamctl(['humans', 'invite', 'dana', '--team', 'support', '--ttl', '7d', '--json']);
    expect(result.code, result.stderr).toBe(0);
    const link = JSON.parse(result.stdout);
    expect(link).toMatchObject({ human_id: danaId, url: expect.stringContaining('/sign-in/link?token=') });
    expect(Date.parse(link.expires_at) - Date.now()).toBeGreaterThan(7 * 86_400_000 - 60_000);
  });

  it('humans invite: a mistyped human gets did-you-mean, an agent is named as one, a mistyped team too; nothing is created', async () => {
    const typo = await teamctl(['humans', 'invite', 'dan', '--team', 'support']);
    expect(typo.code).not.toBe(0);
    expect(typo.stderr).toContain('no human named "dan" in team support (did you mean "dana"?)');
    const agent = await teamctl(['humans', 'invite', 'triager', '--team', 'support']);
    expect(agent.code).not.toBe(0);
    expect(agent.stderr).toContain('it is an agent');
    const team = await teamctl(['humans', 'invite', 'dana', '--team', 'suport']);
    expect(team.code).not.toBe(0);
    expect(team.stderr).toContain('did you mean "support"?');
    expect(typo.stdout + agent.stdout + team.stdout).toBe('');
  });

  it('humans invite --ttl: 60 s to 7 days, as seconds or a duration', () => {
    expect(linkTtlSeconds('900')).toBe(900);
    expect(linkTtlSeconds('15m')).toBe(900);
    expect(linkTtlSeconds('7d')).toBe(604_800);
    for (const bad of ['59', '8d', 'soon', '1.5']) expect(() => linkTtlSeconds(bad)).toThrow(/60 s to 7 days/);
  });
});
