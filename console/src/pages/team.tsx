/**
 * A team of the person's as a picture: its agents and humans around a circle (humans on the
 * left half, agents on the right), a line for each edge. The picture is an image with a text
 * alternative; the same graph follows as lists a screen reader can walk.
 */
import { useEffect, useState } from 'preact/hooks';
import { useRoute } from 'preact-iso';
import { api, ApiError } from '../api.ts';
import { layoutGraph } from '../graph.ts';
import { usePageTitle } from '../page.ts';
import { isMine, useSession } from '../session.ts';
import type { TeamGraph } from '../types.ts';
import { NotFoundPage } from './not-found.tsx';

export function TeamPage() {
  const { params } = useRoute();
  const id = params.id ?? '';
  const { me } = useSession();
  const [team, setTeam] = useState<TeamGraph | undefined>();
  const [missing, setMissing] = useState(false);
  const [error, setError] = useState<string | undefined>();
  usePageTitle(missing ? 'Not found' : team ? `Team ${team.team_name}` : 'Team');
  useEffect(() => {
    setTeam(undefined);
    setMissing(false);
    api.team(id).then(setTeam, (e: unknown) => {
      if (e instanceof ApiError && e.status === 404) setMissing(true);
      else setError((e as Error).message);
    });
  }, [id]);
  if (missing) return <NotFoundPage what="team" />;
  if (error) {
    return (
      <p class="error" role="alert">
        {error}
      </p>
    );
  }
  if (!team) return <p role="status">Loading the team…</p>;
  const ownEmail = (humanId: string) => me.humans.find((h) => h.human_id === humanId)?.email ?? null;
  const names = new Map<string, string>([...team.agents.map((a) => [a.agent_id, a.name] as const), ...team.humans.map((h) => [h.human_id, h.name] as const)]);
  const layout = layoutGraph(team, (humanId) => isMine(me, humanId));
  const summary = `${team.agents.length} ${team.agents.length === 1 ? 'agent' : 'agents'}, ${team.humans.length} ${team.humans.length === 1 ? 'human' : 'humans'}, ${team.edges.length} ${team.edges.length === 1 ? 'edge' : 'edges'}`;
  return (
    <>
      <div class="page-head">
        <h1 tabIndex={-1}>Team {team.team_name}</h1>
        {team.description && <p>{team.description}</p>}
        <p class="muted">{summary}. Read-only: the team is managed as code.</p>
      </div>
      <figure class="graph card">
        <svg viewBox={`0 0 ${layout.width} ${layout.height}`} role="img" aria-labelledby="graph-title graph-desc" focusable="false">
          <title id="graph-title">The graph of team {team.team_name}</title>
          <desc id="graph-desc">
            {summary}.{' '}
            {team.edges.map((e) => `${names.get(e.participants[0]) ?? '?'} talks with ${names.get(e.participants[1]) ?? '?'}`).join('; ')}
          </desc>
          {layout.edges.map((e) => (
            <line key={e.id} x1={e.x1} y1={e.y1} x2={e.x2} y2={e.y2} class="edge" />
          ))}
          {layout.nodes.map((n) => (
            <g key={n.id} class={`node ${n.kind}${n.external ? ' external' : ''}${n.mine ? ' mine' : ''}`} transform={`translate(${n.x} ${n.y})`}>
              {n.kind === 'human' ? <rect x={-20} y={-20} width={40} height={40} rx={20} /> : <rect x={-20} y={-20} width={40} height={40} rx={6} />}
              <text class="glyph" text-anchor="middle" dominant-baseline="central">
                {n.kind === 'human' ? 'H' : 'A'}
              </text>
              <text class="label" text-anchor={n.anchor} x={n.labelDx} y={n.labelDy} dominant-baseline="central">
                {n.name}
                {n.mine ? ' (you)' : ''}
              </text>
            </g>
          ))}
        </svg>
        <figcaption class="legend">
          <span class="key human">H human</span> <span class="key agent">A agent with a provider</span> <span class="key agent external">A external agent (MCP)</span>{' '}
          <span class="key mine">you</span>
        </figcaption>
      </figure>
      <div class="columns">
        <section aria-labelledby="agents-title">
          <h2 id="agents-title">Agents</h2>
          <ul>
            {team.agents.map((a) => (
              <li key={a.agent_id}>
                <strong>{a.name}</strong> — {a.provider ? `${a.provider}${a.model ? ` (${a.model})` : ''}${a.status === 'paused' ? ', paused' : ''}` : 'external, takes part over MCP'}
                {a.description && <span class="muted"> · {a.description}</span>}
              </li>
            ))}
          </ul>
        </section>
        <section aria-labelledby="humans-title">
          <h2 id="humans-title">Humans</h2>
          <ul>
            {team.humans.map((h) => (
              <li key={h.human_id}>
                <strong>{h.name}</strong>
                {isMine(me, h.human_id) ? ' (you)' : ''}
                {/* Only the person's own email: the team graph names teammates, not their addresses. */}
                {ownEmail(h.human_id) && <span class="muted"> · {ownEmail(h.human_id)}</span>}
              </li>
            ))}
          </ul>
        </section>
        <section aria-labelledby="edges-title">
          <h2 id="edges-title">Edges</h2>
          <ul>
            {team.edges.map((e) => (
              <li key={e.edge_id}>
                {names.get(e.participants[0])} ↔ {names.get(e.participants[1])}
              </li>
            ))}
          </ul>
        </section>
      </div>
    </>
  );
}
