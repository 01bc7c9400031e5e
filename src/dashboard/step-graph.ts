import type { PipelineStepInfo } from '../index.js';
import { html, type Html } from './html.js';
import { ms } from './pages/format.js';

const W = 200;
const H = 52;
const GAP_X = 56;
const GAP_Y = 18;
const PAD = 8;

/** The column of each step: the length of the longest chain of needs before it. */
export function stepColumns(steps: readonly Pick<PipelineStepInfo, 'name' | 'needs'>[]): Map<string, number> {
  const by = new Map(steps.map((s) => [s.name, s]));
  const col = new Map<string, number>();
  const depth = (name: string, seen: Set<string>): number => {
    const known = col.get(name);
    if (known !== undefined) return known;
    // A pipeline's graph is acyclic (checked at definition); the guard only keeps a bad row from looping.
    if (seen.has(name)) return 0;
    seen.add(name);
    const needs = by.get(name)?.needs.filter((n) => by.has(n)) ?? [];
    const d = needs.length ? Math.max(...needs.map((n) => depth(n, seen))) + 1 : 0;
    col.set(name, d);
    return d;
  };
  for (const s of steps) depth(s.name, new Set());
  return col;
}

/** What a step's box says under its name: state, attempts, duration, a fan-out's progress. */
function summary(s: PipelineStepInfo): string {
  const parts: string[] = [s.state];
  if (s.items) parts.push(`${s.items.byState.succeeded ?? 0}/${s.items.total} items`);
  else if (s.attempts > 1) parts.push(`${s.attempts} attempts`);
  if (s.durationMs !== null) parts.push(ms(s.durationMs));
  return parts.join(' · ');
}

/** The tooltip of a step: everything about its timing and its error's first line. */
function tooltip(s: PipelineStepInfo): string {
  const lines = [`${s.name}: ${s.state}`, `attempts: ${s.attempts}`];
  if (s.startedAt) lines.push(`started: ${s.startedAt.toISOString()}`);
  if (s.finishedAt) lines.push(`finished: ${s.finishedAt.toISOString()}`);
  if (s.durationMs !== null) lines.push(`took: ${ms(s.durationMs)}`);
  if (s.needs.length) lines.push(`needs: ${s.needs.join(', ')}`);
  if (s.optional) lines.push(`optional (${s.optional === 'skip' ? 'skips dependents' : 'dependents run'})`);
  if (s.effect) lines.push('effect (skipped in dry runs)');
  const msg = s.error && typeof s.error.message === 'string' ? s.error.message.split('\n')[0]!.slice(0, 200) : null;
  if (msg) lines.push(`error: ${msg}`);
  return lines.join('\n');
}

/**
 * A run's steps as a graph drawn on the server as inline SVG: one box per step in the column of
 * its longest chain of needs, an arrow from each need, coloured by state (classes of the
 * dashboard's stylesheet, so no inline style and the CSP stays nonce-only). Each box links to
 * its row in the steps table (and so to its job) and has a tooltip with its timings.
 */
export function stepGraph(steps: readonly PipelineStepInfo[]): Html {
  const col = stepColumns(steps);
  const rows = new Map<number, number>();
  const pos = new Map<string, { x: number; y: number }>();
  for (const s of steps) {
    const c = col.get(s.name) ?? 0;
    const r = rows.get(c) ?? 0;
    rows.set(c, r + 1);
    pos.set(s.name, { x: PAD + c * (W + GAP_X), y: PAD + r * (H + GAP_Y) });
  }
  const width = PAD * 2 + (Math.max(0, ...col.values()) + 1) * (W + GAP_X) - GAP_X;
  const height = PAD * 2 + Math.max(1, ...rows.values()) * (H + GAP_Y) - GAP_Y;
  const edges = steps.flatMap((s) =>
    s.needs
      .filter((n) => pos.has(n))
      .map((n) => {
        const a = pos.get(n)!;
        const b = pos.get(s.name)!;
        const x1 = a.x + W;
        const y1 = a.y + H / 2;
        const x2 = b.x - 4;
        const y2 = b.y + H / 2;
        const mid = (x1 + x2) / 2;
        return html`<path class="edge" d="M${x1},${y1} C${mid},${y1} ${mid},${y2} ${x2},${y2}" marker-end="url(#ns-arrow)" />`;
      }),
  );
  const nodes = steps.map((s) => {
    const p = pos.get(s.name)!;
    const label = s.name.length > 26 ? `${s.name.slice(0, 25)}…` : s.name;
    return html`<a href="#step-${s.name}" class="node step-${s.state}" data-step="${s.name}" data-state="${s.state}">
      <title>${tooltip(s)}</title>
      <rect x="${p.x}" y="${p.y}" width="${W}" height="${H}" rx="6" />
      <text x="${p.x + 10}" y="${p.y + 20}" class="name">${label}${s.map ? ' [map]' : ''}</text>
      <text x="${p.x + 10}" y="${p.y + 40}" class="sub">${summary(s)}</text>
    </a>`;
  });
  return html`<figure class="step-graph">
    <svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 ${width} ${height}" width="${width}" height="${height}" role="img" aria-label="step graph">
      <defs>
        <marker id="ns-arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" class="arrow" /></marker>
      </defs>
      ${edges} ${nodes}
    </svg>
  </figure>`;
}
