/**
 * A pipeline step that speaks as a provider agent and awaits a human's reply: the reply belongs to
 * the run, not to the agent's loop (issue 22 item 3). `teamctl apply` and `teamctl run` in-process
 * against a real acs-server whose agent loop runs the echo provider.
 */
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AcsClient } from '../../client/acs-client.ts';
import { startServer } from '../../service/index.ts';
import { runTeamctl } from '../support/cli.ts';

const definition = `apiVersion: teamctl/v1
organization:
  name: asker
  providerKeys:
    echo: \${env:ECHO_PROVIDER_KEY}
teams:
  - name: desk
    agents:
      - name: triager
        provider: echo
    humans:
      - name: dana
    edges:
      - [dana, triager]
pipelines:
  - name: approval
    team: desk
    steps:
      - id: ask
        from: triager
        to: dana
        subject: Approve v2?
        content: May we roll out v2?
    output: "{{ steps.ask.reply }}"
`;

let server: Awaited<ReturnType<typeof startServer>>;
let dir: string;
let env: NodeJS.ProcessEnv;

beforeAll(async () => {
  server = await startServer({ inMemory: true, port: 0, tickMs: 20, logger: false });
  const org = await server.provisionOrganization('asker-admin');
  dir = await mkdtemp(join(tmpdir(), 'teamctl-asker-'));
  await writeFile(join(dir, 'team.yaml'), definition);
  env = { ACS_BASE_URL: server.url, ACS_API_KEY: org.api_key, ECHO_PROVIDER_KEY: 'echo-key-for-tests' };
});

afterAll(async () => {
  await server?.close();
  await rm(dir, { recursive: true, force: true });
});

describe('a pipeline that asks as a provider agent', () => {
  it('run: the echo agent the step speaks as leaves the awaited answer to the run, and answers what comes after it', async () => {
    const applied = await runTeamctl(['apply', '-f', join(dir, 'team.yaml'), '--auto-approve'], env);
    expect(applied.code, applied.stderr).toBe(0);
    const running = runTeamctl(['run', 'approval', '-f', join(dir, 'team.yaml'), '--json'], env);

    const client = new AcsClient({ baseUrl: server.url, apiKey: env.ACS_API_KEY! });
    const org = (await client.listOrganizations()).find((o) => o.org_name === 'asker')!;
    const team = (await client.listTeams(org.org_id))[0]!;
    const graph = await client.getTeam(team.team_id);
    const dana = graph.humans[0]!.human_id;
    // The step's thread shows that it awaits dana's answer as soon as the question is sent.
    let thread = null;
    for (let i = 0; i < 300 && !thread; i += 1) {
      thread = (await client.listThreads(graph.edges[0]!.edge_id))[0] ?? null;
      if (!thread) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(thread).toMatchObject({ subject: 'Approve v2?', awaiting_reply_from: dana });

    await client.appendMessage(thread!.thread_id, { sender_agent_id: dana, content: 'approve' });
    const run = await running;
    expect(run.code, run.stderr).toBe(0);
    expect(JSON.parse(run.stdout)).toMatchObject({ output: 'approve' });

    // The loop answers in order: an answer to 'approve' would come before the answer to this one.
    await client.appendMessage(thread!.thread_id, { sender_agent_id: dana, content: 'thanks' });
    let contents: string[] = [];
    for (let after: string | null = null; !contents.includes('echo: thanks'); ) {
      const page = await client.getThread(thread!.thread_id, { after, wait: 5 });
      contents = [...contents, ...page.messages.map((m) => m.content)];
      after = page.next_after;
    }
    expect(contents).toEqual(['May we roll out v2?', 'approve', 'thanks', 'echo: thanks']);
  });
});
