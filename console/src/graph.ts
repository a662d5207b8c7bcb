/**
 * Where each participant of a team graph is drawn: around a circle, humans on the left half and
 * agents on the right (each in name order), so the people and the agents read as two groups and
 * every edge is a straight line across. Labels sit outside the circle, away from the lines.
 */
import type { TeamGraph } from './types.ts';

export interface PlacedNode {
  id: string;
  name: string;
  kind: 'agent' | 'human';
  external: boolean;
  mine: boolean;
  x: number;
  y: number;
  anchor: 'start' | 'end' | 'middle';
  labelDx: number;
  labelDy: number;
}

export interface PlacedEdge {
  id: string;
  x1: number;
  y1: number;
  x2: number;
  y2: number;
}

/** The positions of `team`'s participants and edges in a `width` × `height` picture. */
export function layoutGraph(team: TeamGraph, mine: (humanId: string) => boolean): { width: number; height: number; nodes: PlacedNode[]; edges: PlacedEdge[] } {
  const byName = <T extends { name: string }>(list: T[]) => [...list].sort((a, b) => a.name.localeCompare(b.name));
  type Node = { id: string; name: string; kind: 'agent' | 'human'; external: boolean; mine: boolean };
  const humans: Node[] = byName(team.humans).map((h) => ({ id: h.human_id, name: h.name, kind: 'human', external: false, mine: mine(h.human_id) }));
  const agents: Node[] = byName(team.agents).map((a) => ({ id: a.agent_id, name: a.name, kind: 'agent', external: a.provider === null, mine: false }));
  const count = humans.length + agents.length;
  const radius = Math.max(90, Math.min(260, 34 * count));
  const width = radius * 2 + 360;
  const height = radius * 2 + 120;
  const cx = width / 2;
  const cy = height / 2;
  // Humans spread over the left half (90°…270°), agents over the right (-90°…90°).
  const place = (group: typeof humans, from: number, to: number) =>
    group.map((node, i) => {
      const angle = group.length === 1 ? (from + to) / 2 : from + ((to - from) * (i + 0.5)) / group.length;
      const x = cx + radius * Math.cos(angle);
      const y = cy + radius * Math.sin(angle);
      const right = Math.cos(angle) > 0.3;
      const left = Math.cos(angle) < -0.3;
      return {
        ...node,
        x,
        y,
        anchor: right ? ('start' as const) : left ? ('end' as const) : ('middle' as const),
        labelDx: right ? 28 : left ? -28 : 0,
        labelDy: right || left ? 0 : Math.sin(angle) > 0 ? 34 : -34,
      };
    });
  const nodes = [...place(humans, (3 * Math.PI) / 2, Math.PI / 2), ...place(agents, -Math.PI / 2, Math.PI / 2)];
  if (humans.length === 0) nodes.splice(0, nodes.length, ...place(agents, -Math.PI / 2, (3 * Math.PI) / 2));
  if (agents.length === 0) nodes.splice(0, nodes.length, ...place(humans, -Math.PI / 2, (3 * Math.PI) / 2));
  const at = new Map(nodes.map((n) => [n.id, n]));
  const edges = team.edges.flatMap((e) => {
    const a = at.get(e.participants[0]);
    const b = at.get(e.participants[1]);
    return a && b ? [{ id: e.edge_id, x1: a.x, y1: a.y, x2: b.x, y2: b.y }] : [];
  });
  return { width, height, nodes, edges };
}
