import { renderLineChart, SYSTEM_COLORS, type ChartSeries } from '../charts/line-chart.js';
import { summarise, type Summary } from '../stats.js';
import type { ScaleSizes } from './sizes.js';

/** The figures of one curve: point label → series → value of each run. */
export interface CurveResult {
  key: string;
  title: string;
  xLabel: string;
  yLabel: string;
  unit: string;
  better: 'higher' | 'lower';
  yLog: boolean;
  suffixes: string[];
  notes: string[];
  points: { x: number; label: string }[];
  /** point label → `<system>` or `<system> <suffix>` → runs. */
  values: Record<string, Record<string, number[]>>;
  /** point label → `<system> <extra>` → runs (table only). */
  extra: Record<string, Record<string, number[]>>;
}

/** Everything one scale run produced. */
export interface ScaleResults {
  mode: 'full' | 'quick';
  startedAt: string;
  durationSeconds: number;
  machine: { cpus: number; model: string; memoryGb: number; node: string; loadBefore: number[]; loadAfter: number[] };
  server: Record<string, string>;
  systems: { id: string; label: string }[];
  sizes: ScaleSizes;
  curves: CurveResult[];
  notes: string[];
}

const seriesKey = (id: string, suffix: string) => (suffix ? `${id} ${suffix}` : id);

function fmt(v: number, unit: string): string {
  if (!Number.isFinite(v)) return '–';
  if (unit === 'ms') return v < 10 ? v.toFixed(2) : v < 1000 ? v.toFixed(1) : Math.round(v).toLocaleString('en-US');
  if (v < 10) return v.toFixed(2);
  if (v < 100) return v.toFixed(1);
  return Math.round(v).toLocaleString('en-US');
}

function cell(s: Summary | null, unit: string): string {
  if (!s) return 'n/a';
  return s.runs > 1 && s.min !== s.max ? `${fmt(s.median, unit)} (${fmt(s.min, unit)}–${fmt(s.max, unit)})` : fmt(s.median, unit);
}

const ratio = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined || !Number.isFinite(a) || !Number.isFinite(b) || b === 0 ? '–' : `${(a / b).toFixed(2)}×`);

/** The chart of one curve, from the medians. */
export function curveChart(r: ScaleResults, c: CurveResult): string {
  const series: ChartSeries[] = [];
  for (const sys of r.systems) {
    c.suffixes.forEach((suffix, i) => {
      const values = c.points.map((p) => summarise(c.values[p.label]?.[seriesKey(sys.id, suffix)] ?? [])?.median ?? null);
      series.push({
        name: suffix ? `${sys.id} ${suffix}` : sys.id,
        values,
        line: (['solid', 'dashed', 'dotted'] as const)[i % 3]!,
        symbol: (['circle', 'triangle', 'rect'] as const)[i % 3]!,
        ...(SYSTEM_COLORS[sys.id] ? { color: SYSTEM_COLORS[sys.id]! } : {}),
      });
    });
  }
  const runs = r.sizes.runs;
  const subtitle = [
    `${r.mode === 'quick' ? 'QUICK SMOKE RUN (tiny sizes; shapes only, not figures). ' : ''}Median of ${runs} run${runs > 1 ? 's' : ''}, systems interleaved; ${r.systems.map((s) => s.label).join(' vs ')}; ${r.machine.cpus} CPUs, PostgreSQL ${r.server.server_version ?? '?'}, ${r.startedAt.slice(0, 10)}.`,
    ...(c.key === 'history' ? ['graphile-worker deletes completed jobs: it retains no history, so its curve is flat by design.'] : []),
  ].join('\n');
  return renderLineChart({ title: c.title, subtitle, xLabel: c.xLabel, yLabel: c.yLabel, categories: c.points.map((p) => p.label), series, yLog: c.yLog });
}

/** The markdown of the run: per curve, the chart, a table of medians (min–max) and ratios, and its notes. */
export function renderScaleMarkdown(r: ScaleResults, chartFile: (key: string) => string): string {
  const label = (id: string) => r.systems.find((s) => s.id === id)?.label ?? id;
  const ids = r.systems.map((s) => s.id);
  const out: string[] = [`# nightshift scale curves (${r.mode})`, ''];
  out.push(
    `${r.startedAt}, ${Math.round(r.durationSeconds)} s. ${r.machine.cpus} × ${r.machine.model}, ${r.machine.memoryGb} GB, Node ${r.machine.node}, PostgreSQL ${r.server.server_version ?? '?'}. ` +
      `Load average before/after: ${r.machine.loadBefore.map((x) => x.toFixed(2)).join(' ')} / ${r.machine.loadAfter.map((x) => x.toFixed(2)).join(' ')}.`,
    '',
    `Each cell: median of ${r.sizes.runs} run${r.sizes.runs > 1 ? 's' : ''} (min–max), the systems interleaved run by run. Ratio = nightshift ÷ graphile-worker (above 1 is better for throughput, below 1 for latency and idle cost); "vs first" = the figure ÷ the same system's figure at the curve's first point.`,
    '',
  );
  if (r.mode === 'quick') out.push('**Quick smoke run**: tiny sizes and one run, to check that every curve runs; the figures are not for comparison.', '');
  const peer = ids.find((i) => i !== 'nightshift');
  for (const c of r.curves) {
    out.push(`## ${c.title}`, '', `![${c.title}](${chartFile(c.key)})`, '');
    const series = ids.flatMap((id) => c.suffixes.map((sfx) => ({ id, sfx, key: seriesKey(id, sfx) })));
    const extras = [...new Set(Object.values(c.extra).flatMap((e) => Object.keys(e)))].sort((a, b) => ids.findIndex((id) => a.startsWith(`${id} `)) - ids.findIndex((id) => b.startsWith(`${id} `)));
    const head = [c.xLabel, ...series.map((s) => `${label(s.id)}${s.sfx ? ` ${s.sfx}` : ''} (${c.unit})`)];
    const single = c.suffixes.length === 1 && ids.includes('nightshift') && peer;
    if (single) head.push(`nightshift ÷ ${peer}`, ...ids.map((id) => `${id} vs first`));
    else if (ids.includes('nightshift') && peer) head.push(...c.suffixes.map((sfx) => `${sfx} nightshift ÷ ${peer}`));
    head.push(...extras);
    out.push(`| ${head.join(' | ')} |`, `|${head.map((_, i) => (i === 0 ? ' --- ' : ' ---: ')).join('|')}|`);
    const med = (point: string, key: string) => summarise(c.values[point]?.[key] ?? [])?.median;
    const first = c.points[0]?.label ?? '';
    for (const p of c.points) {
      const row = [p.label, ...series.map((s) => cell(summarise(c.values[p.label]?.[s.key] ?? []), c.unit))];
      if (single) row.push(ratio(med(p.label, 'nightshift'), med(p.label, peer)), ...ids.map((id) => ratio(med(p.label, id), med(first, id))));
      else if (ids.includes('nightshift') && peer) row.push(...c.suffixes.map((sfx) => ratio(med(p.label, seriesKey('nightshift', sfx)), med(p.label, seriesKey(peer, sfx)))));
      row.push(...extras.map((e) => cell(summarise(c.extra[p.label]?.[e] ?? []), 'jobs/s')));
      out.push(`| ${row.join(' | ')} |`);
    }
    out.push('', ...c.notes.map((n) => `- ${n}`), '');
    if (c.key === 'payload') out.push(...payloadCost(r, c), '');
  }
  out.push(
    '## Settings',
    '',
    `PostgreSQL: ${Object.entries(r.server)
      .map(([k, v]) => `${k}=${v}`)
      .join(', ')}.`,
    '',
  );
  out.push(`Systems: ${r.systems.map((s) => s.label).join(', ')} — with the settings of bench/README.md (graphile-worker: its performance-guide preset).`, '');
  if (r.notes.length) out.push('## Notes', '', ...r.notes.map((n) => `- ${n}`), '');
  return out.join('\n');
}

/** What the payload costs: extra time per job over the no-op payload, and payload bytes per second. */
function payloadCost(r: ScaleResults, c: CurveResult): string[] {
  const lines = ['What the payload costs (from the medians): extra worker time per job over the no-op payload, and payload moved per second.', ''];
  const base = c.points[0];
  if (!base) return [];
  for (const sys of r.systems) {
    const b = summarise(c.values[base.label]?.[sys.id] ?? [])?.median;
    const parts = c.points.slice(1).map((p) => {
      const v = summarise(c.values[p.label]?.[sys.id] ?? [])?.median;
      if (b === undefined || v === undefined) return `${p.label}: n/a`;
      const extraUs = (1 / v - 1 / b) * 1e6;
      return `${p.label}: +${Math.round(extraUs)} µs per job, ${((v * p.x) / 1e6).toFixed(1)} MB/s of payload`;
    });
    lines.push(`- ${sys.id}: ${parts.join('; ')}`);
  }
  return lines;
}
