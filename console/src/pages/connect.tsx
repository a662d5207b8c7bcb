/**
 * Connect an agent: for an external agent (no provider) of a team of the person's, create an MCP
 * key — shown once, inside a ready-to-paste configuration for the chosen MCP client, as `teamctl
 * mcp config` prints it — and list and revoke its keys.
 */
import { useEffect, useState } from 'preact/hooks';
import { entryName, McpConfigFormats, renderMcpConfig, type McpConfigFormat } from '../../../api/mcp-config.ts';
import { api } from '../api.ts';
import { usePageTitle, when } from '../page.ts';
import { useSession } from '../session.ts';
import type { CreatedMcpKey, McpKey } from '../types.ts';

interface ExternalAgent {
  agent_id: string;
  name: string;
  team_name: string;
}

const formatNames: Record<McpConfigFormat, string> = {
  claude: 'Claude Desktop',
  cursor: 'Cursor',
  vscode: 'VS Code',
  json: 'Any MCP client (JSON)',
};

const whereItGoes: Record<McpConfigFormat, string> = {
  claude: 'Merge it into claude_desktop_config.json under "mcpServers" and restart Claude Desktop (it runs the mcp-remote bridge with npx).',
  cursor: 'Merge it into ~/.cursor/mcp.json or .cursor/mcp.json under "mcpServers".',
  vscode: 'Merge it into .vscode/mcp.json under "servers".',
  json: 'The endpoint and the header to send on every request.',
};

export function ConnectPage() {
  usePageTitle('Connect an agent');
  const { me } = useSession();
  const [agents, setAgents] = useState<ExternalAgent[] | undefined>();
  const [agentId, setAgentId] = useState('');
  const [keys, setKeys] = useState<McpKey[] | undefined>();
  const [created, setCreated] = useState<CreatedMcpKey | undefined>();
  const [format, setFormat] = useState<McpConfigFormat>('claude');
  const [status, setStatus] = useState('');
  const [error, setError] = useState<string | undefined>();

  useEffect(() => {
    const teamIds = [...new Set(me.humans.map((h) => h.team_id))];
    Promise.all(teamIds.map((id) => api.team(id))).then(
      (teams) => {
        const found = teams.flatMap((t) => t.agents.filter((a) => a.provider === null).map((a) => ({ agent_id: a.agent_id, name: a.name, team_name: t.team_name })));
        setAgents(found);
        setAgentId((current) => current || found[0]?.agent_id || '');
      },
      (e: unknown) => setError((e as Error).message),
    );
  }, [me]);

  const loadKeys = async (id: string) => {
    if (!id) return;
    try {
      setKeys((await api.agentKeys(id)).mcp_keys);
    } catch (e) {
      setError((e as Error).message);
    }
  };
  useEffect(() => {
    setKeys(undefined);
    setCreated(undefined);
    void loadKeys(agentId);
  }, [agentId]);

  const agent = agents?.find((a) => a.agent_id === agentId);
  const create = async () => {
    setError(undefined);
    try {
      const key = await api.createAgentKey(agentId);
      setCreated(key);
      setStatus(`A new MCP key ${key.prefix}… was created for ${agent?.name}. It is shown only once.`);
      await loadKeys(agentId);
    } catch (e) {
      setError((e as Error).message);
    }
  };
  const revoke = async (key: McpKey) => {
    setError(undefined);
    try {
      await api.revokeAgentKey(agentId, key.key_id);
      if (created?.key_id === key.key_id) setCreated(undefined);
      setStatus(`The key ${key.prefix}… was revoked: clients using it are refused from now on.`);
      await loadKeys(agentId);
    } catch (e) {
      setError((e as Error).message);
    }
  };
  const config =
    created && agent
      ? JSON.stringify(renderMcpConfig(format, { name: entryName(agent.team_name, agent.name), url: `${location.origin}/api/v1/mcp`, key: created.mcp_key }), null, 2)
      : '';

  return (
    <>
      <div class="page-head">
        <h1 tabIndex={-1}>Connect an agent</h1>
        <p class="muted">An external agent takes part in its team's threads from an MCP client (Claude Desktop, Cursor, VS Code, …) with an MCP key of its own.</p>
      </div>
      <p role="status" class="visually-hidden">
        {status}
      </p>
      {error && (
        <p class="error" role="alert">
          {error}
        </p>
      )}
      {agents?.length === 0 && <p>Your teams have no external agent (an agent without a provider). Add one to the team's definition first.</p>}
      {agents && agents.length > 0 && (
        <section class="card" aria-labelledby="agent-label">
          <label id="agent-label" for="agent">
            Agent
          </label>
          <select id="agent" value={agentId} onChange={(e) => setAgentId((e.target as HTMLSelectElement).value)}>
            {agents.map((a) => (
              <option key={a.agent_id} value={a.agent_id}>
                {a.name} (team {a.team_name})
              </option>
            ))}
          </select>
          <p>
            <button type="button" onClick={create}>
              Create MCP key
            </button>
          </p>
          {created && (
            <div class="secret" aria-labelledby="new-key-title">
              <h2 id="new-key-title">Your new MCP key</h2>
              <p>Copy it now: it is shown only once. The configuration below holds it; keep it out of version control.</p>
              <label for="config-format">Client</label>
              <select id="config-format" value={format} onChange={(e) => setFormat((e.target as HTMLSelectElement).value as McpConfigFormat)}>
                {Object.values(McpConfigFormats).map((f) => (
                  <option key={f} value={f}>
                    {formatNames[f]}
                  </option>
                ))}
              </select>
              <label for="config">Configuration</label>
              <textarea id="config" readOnly rows={Math.min(16, config.split('\n').length + 1)} value={config} />
              <p class="muted">{whereItGoes[format]}</p>
              <button type="button" class="secondary" onClick={() => void navigator.clipboard?.writeText(config).then(() => setStatus('The configuration was copied.'))}>
                Copy configuration
              </button>
            </div>
          )}
          <h2 id="keys-title">Keys of {agent?.name}</h2>
          {keys && keys.length === 0 && <p>No active key.</p>}
          {keys && keys.length > 0 && (
            <table aria-labelledby="keys-title">
              <thead>
                <tr>
                  <th scope="col">Key</th>
                  <th scope="col">Created</th>
                  <th scope="col">Last used</th>
                  <th scope="col">
                    <span class="visually-hidden">Actions</span>
                  </th>
                </tr>
              </thead>
              <tbody>
                {keys.map((k) => (
                  <tr key={k.key_id}>
                    <td>
                      <code>{k.prefix}…</code>
                    </td>
                    <td>{when(k.created_at)}</td>
                    <td>{k.last_used_at ? when(k.last_used_at) : 'never'}</td>
                    <td>
                      <button type="button" class="danger" aria-label={`Revoke key ${k.prefix}`} onClick={() => revoke(k)}>
                        Revoke
                      </button>
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          )}
        </section>
      )}
    </>
  );
}
