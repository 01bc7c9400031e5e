import type { CeilingFigure, CeilingMethod } from './raw-ceiling.js';
import type { Sizes } from './scenarios.js';
import { summarise, type Summary } from './stats.js';
import { STREAM_MEASURES, type StreamResults } from './streams/scenario.js';

type SystemId = 'nightshift' | 'nightshift-limited' | 'graphile-worker' | 'pg-boss';

/** Everything one benchmark run produced. */
export interface BenchResults {
  mode: 'full' | 'quick';
  startedAt: string;
  durationSeconds: number;
  machine: { cpus: number; model: string; memoryGb: number; node: string; platform: string; loadBefore: number[]; loadAfter: number[] };
  server: Record<string, string>;
  sizes: Sizes;
  systems: { id: SystemId; label: string; settings: Record<string, Record<string, string>> }[];
  /** metric key → system → value of each run. */
  figures: Record<string, Partial<Record<SystemId, number[]>>>;
  /** Drain key → system → jobs/s by run number (index 0: run 1; null: that run failed), for pairing runs that ran back to back. */
  drainRuns?: Record<string, Partial<Record<SystemId, (number | null)[]>>>;
  ceiling: { method: CeilingMethod | null; values: Partial<Record<CeilingFigure['key'], number[]>> };
  /** Redis Streams against the raw ceiling and BullMQ (`--only streams`). */
  streams?: StreamResults;
  notes: string[];
}

interface Metric {
  key: string;
  label: string;
  unit: 'jobs/s' | 'ms' | 'MB' | 'µs';
  better: 'higher' | 'lower';
  ceiling?: CeilingFigure['key'];
  /** The target for nightshift, and how to check it from the medians. */
  target?: { text: string; met(ns: number, peer: (id: SystemId) => number | undefined): boolean | undefined };
}

const times = (peer: SystemId, factor: number) => (ns: number, p: (id: SystemId) => number | undefined) => {
  const v = p(peer);
  return v === undefined ? undefined : ns >= factor * v;
};

/** The rows of the table, in order. */
export const METRICS: Metric[] = [
  { key: 'bulk', label: 'Bulk enqueue (batch API)', unit: 'jobs/s', better: 'higher', ceiling: 'insert-batch', target: { text: '≥ 2× graphile-worker', met: times('graphile-worker', 2) } },
  {
    key: 'single',
    label: 'Single enqueue, 16 producers',
    unit: 'jobs/s',
    better: 'higher',
    ceiling: 'insert-one',
    target: {
      text: '≥ 3× best peer',
      met: (ns, p) => {
        const peers = [p('graphile-worker'), p('pg-boss')].filter((x): x is number => x !== undefined);
        return peers.length ? ns >= 3 * Math.max(...peers) : undefined;
      },
    },
  },
  { key: 'drain-1x10', label: 'Drain, 1 process × concurrency 10', unit: 'jobs/s', better: 'higher', ceiling: 'claim-delete', target: { text: '≥ 1.5× graphile-worker', met: times('graphile-worker', 1.5) } },
  { key: 'drain-1x50', label: 'Drain, 1 process × concurrency 50', unit: 'jobs/s', better: 'higher', ceiling: 'claim-delete', target: { text: '≥ 1.5× graphile-worker', met: times('graphile-worker', 1.5) } },
  { key: 'drain-2x10', label: 'Drain, 2 processes × concurrency 10', unit: 'jobs/s', better: 'higher', ceiling: 'claim-delete', target: { text: '≥ 1.5× graphile-worker', met: times('graphile-worker', 1.5) } },
  ...(['1x10', '1x50', '2x10'] as const).map((shape): Metric => ({ key: `cpu-${shape}`, label: `Drain CPU per job, ${shape.replace('x', ' × ')} (workers + database)`, unit: 'µs', better: 'lower' })),
  { key: 'latency-p50', label: 'Latency enqueue → start, p50', unit: 'ms', better: 'lower', target: { text: '< 3 ms', met: (ns) => ns < 3 } },
  { key: 'latency-p95', label: 'Latency enqueue → start, p95', unit: 'ms', better: 'lower' },
  {
    key: 'latency-p99',
    label: 'Latency enqueue → start, p99',
    unit: 'ms',
    better: 'lower',
    target: { text: '≤ graphile-worker', met: (ns, p) => (p('graphile-worker') === undefined ? undefined : ns <= p('graphile-worker')!) },
  },
  { key: 'rss-1x50', label: 'Worker peak RSS, concurrency 50', unit: 'MB', better: 'lower', target: { text: '< 80 MB', met: (ns) => ns < 80 } },
];

const CEILING_LABEL: Record<CeilingFigure['key'], string> = {
  'insert-one': 'insert, one row per statement',
  'insert-batch': 'insert, 100 rows per statement',
  'claim-delete': 'claim 100 (SKIP LOCKED) + delete',
};

function fmt(v: number, unit: Metric['unit']): string {
  if (!Number.isFinite(v)) return '–';
  if (unit === 'jobs/s') return Math.round(v).toLocaleString('en-US');
  if (unit === 'ms') return v < 10 ? v.toFixed(2) : v.toFixed(1);
  return v.toFixed(1);
}

function cell(s: Summary | null, unit: Metric['unit']): string {
  if (!s) return 'n/a';
  return s.runs > 1 && s.min !== s.max ? `${fmt(s.median, unit)} (${fmt(s.min, unit)}–${fmt(s.max, unit)})` : fmt(s.median, unit);
}

function ratio(a: number | undefined, b: number | undefined): string {
  if (a === undefined || b === undefined || !Number.isFinite(a) || !Number.isFinite(b) || b === 0) return '–';
  return `${(a / b).toFixed(2)}×`;
}

/**
 * The limits' cost, paired: each run of nightshift with its limited twin, which ran right after
 * it on the same server. On a machine whose speed drifts between runs (a shared VM), the ratio of
 * each pair moves less than the ratio of the two medians.
 */
function renderLimitsCost(r: BenchResults): string[] {
  const shapes = Object.entries(r.drainRuns ?? {}).filter(([, by]) => by.nightshift && by['nightshift-limited']);
  if (shapes.length === 0) return [];
  const out = [
    '## The limits’ cost, run by run',
    '',
    'Drain jobs/s of nightshift ÷ nightshift with limits on (not hit), each run with the limited run right after it. Target: ≤ 1.10× (the limits cost at most 10 % of drain throughput).',
    '',
    '| Drain | ratio of each pair | median | Met |',
    '| --- | --- | ---: | ---: |',
  ];
  for (const [key, by] of shapes) {
    const a = by.nightshift!;
    const b = by['nightshift-limited']!;
    const pairs = a.flatMap((x, i) => (x !== null && typeof b[i] === 'number' ? [x / b[i]!] : []));
    const m = summarise(pairs);
    const label = METRICS.find((x) => x.key === key)?.label ?? key;
    out.push(`| ${label} | ${pairs.map((p) => `${p.toFixed(2)}×`).join(', ')} | ${m ? `${m.median.toFixed(2)}×` : '–'} | ${m ? (m.median <= 1.1 ? 'yes' : 'no') : ''} |`);
  }
  out.push('');
  return out;
}

/** Renders the results as Markdown: the table, the ceiling, the settings and the conditions. */
export function renderMarkdown(r: BenchResults): string {
  const label = (id: SystemId) => r.systems.find((s) => s.id === id)?.label ?? id;
  const ids = r.systems.map((s) => s.id);
  const med = (key: string, id: SystemId) => summarise(r.figures[key]?.[id] ?? [])?.median;
  const ceil = (k: CeilingFigure['key']) => summarise(r.ceiling.values[k] ?? []);
  const out: string[] = [];
  out.push(`# nightshift benchmark (${r.mode})`, '');
  out.push(
    `${r.startedAt}, ${Math.round(r.durationSeconds)} s. ${r.machine.cpus} × ${r.machine.model}, ${r.machine.memoryGb} GB, Node ${r.machine.node}, ` +
      `PostgreSQL ${r.server.server_version ?? '?'}. Load average before/after: ${r.machine.loadBefore.map((x) => x.toFixed(2)).join(' ')} / ${r.machine.loadAfter.map((x) => x.toFixed(2)).join(' ')}.`,
    '',
  );
  out.push(`Each cell: median of ${r.sizes.runs} run${r.sizes.runs > 1 ? 's' : ''} (min–max). Ratio = nightshift ÷ peer: above 1 is better for throughput, below 1 is better for latency and memory.`, '');
  const head = ['Measure', ...ids.map(label), ...ids.filter((i) => i !== 'nightshift').map((i) => `nightshift ÷ ${i}`), 'Raw ceiling', 'nightshift / ceiling', 'Target', 'Met'];
  out.push(`| ${head.join(' | ')} |`, `|${head.map((_, i) => (i === 0 ? ' --- ' : ' ---: ')).join('|')}|`);
  for (const m of METRICS) {
    if (!ids.some((id) => r.figures[m.key]?.[id]?.length)) continue;
    const ns = med(m.key, 'nightshift');
    const c = m.ceiling ? ceil(m.ceiling) : null;
    const met = ns === undefined || !m.target ? undefined : m.target.met(ns, (id) => med(m.key, id));
    const row = [
      `${m.label} (${m.unit})`,
      ...ids.map((id) => cell(summarise(r.figures[m.key]?.[id] ?? []), m.unit)),
      ...ids.filter((i) => i !== 'nightshift').map((i) => ratio(ns, med(m.key, i))),
      c ? fmt(c.median, m.unit) : '',
      c && ns !== undefined ? `${Math.round((ns / c.median) * 100)} %` : '',
      m.target?.text ?? '',
      met === undefined ? '' : met ? 'yes' : 'no',
    ];
    out.push(`| ${row.join(' | ')} |`);
  }
  out.push('');
  out.push(...renderLimitsCost(r));
  out.push('## Raw-SQL ceiling of this PostgreSQL', '');
  if (r.ceiling.method) {
    out.push(
      `Measured with ${r.ceiling.method.tool}, no queue library: a minimal jobs table with a partial claim index. ` +
        'A single enqueue can pass the one-row ceiling: nightshift coalesces concurrent enqueues into one statement.',
      '',
    );
    out.push('| Statement | Clients | jobs/s |', '| --- | ---: | ---: |');
    for (const k of Object.keys(CEILING_LABEL) as CeilingFigure['key'][]) {
      out.push(`| ${CEILING_LABEL[k]} | ${r.ceiling.method.clients[k]} | ${cell(ceil(k), 'jobs/s')} |`);
    }
  } else out.push('Not measured.');
  out.push('');
  if (r.streams) out.push(...renderStreams(r.streams), '');
  out.push('## Workloads', '');
  const s = r.sizes;
  out.push(
    `- Bulk enqueue: ${s.bulk.toLocaleString('en-US')} no-op jobs in one call of each system's batch API, from a separate process.`,
    `- Single enqueue: ${s.single.toLocaleString('en-US')} jobs from ${s.producers} concurrent producers in one process, each job its own enqueue call, resolved when committed.`,
    `- Drain: ${s.drain.toLocaleString('en-US')} pre-enqueued no-op jobs (then VACUUM ANALYZE and CHECKPOINT); timed from the first handler start to the moment the database holds no unfinished job, so batched completions must have committed. Worker processes are real child processes. Drain CPU per job: user + system time of the worker processes from their first handler start, plus that of every postgres process on the machine over the drain (the embedded server: run the bench alone), divided by the jobs: what a job costs the machine, which other processes' load moves less than jobs/s (a VM whose host slows it moves both).`,
    `- Latency: ${s.latencyPerSecond} jobs/s for ${s.latencySeconds} s into a running worker (concurrency 10) idle for 1.5 s before; from just before the enqueue call to handler start, across processes on one clock.`,
    '- Peak RSS: the kernel high-water mark (VmHWM) of the worker process in the concurrency-50 drain. Children run as bundled JavaScript on plain node, without a TypeScript loader.',
    '- Every system gets a fresh database cloned from its migrated template for each run.',
    '',
  );
  out.push('## Settings', '');
  out.push(
    `PostgreSQL: ${Object.entries(r.server)
      .map(([k, v]) => `${k}=${v}`)
      .join(', ')}.`,
    '',
  );
  for (const sys of r.systems) {
    out.push(`**${sys.label}**`, '');
    for (const [shape, settings] of Object.entries(sys.settings)) {
      out.push(
        `- ${shape}: ${Object.entries(settings)
          .map(([k, v]) => `${k} ${v}`)
          .join('; ')}`,
      );
    }
    out.push('');
  }
  if (r.notes.length) {
    out.push('## Notes', '', ...r.notes.map((n) => `- ${n}`), '');
  }
  return out.join('\n');
}

/** The streams table: entries/s of each line and its share of the raw ceiling of the same Redis. */
function renderStreams(st: StreamResults): string[] {
  const out = ['## Redis Streams', ''];
  out.push(
    `${st.redis}; every line on the same server in one run, rounds interleaved, each run in its own child process on an emptied server. ` +
      `Consume: ${st.sizes.consume.toLocaleString('en-US')} entries (jobs) already added, from the first handler call to the last acknowledgement (nightshift: nothing pending in the group; BullMQ: its last \`completed\` event, jobs removed on completion). ` +
      `Publish: ${st.sizes.publish.toLocaleString('en-US')} entries, each call resolved when Redis answered.`,
    '',
  );
  out.push('| Measure | entries/s | share of raw ceiling | target | met |', '| --- | ---: | ---: | --- | --- |');
  const med = (k: string) => summarise(st.figures[k] ?? [])?.median;
  for (const m of STREAM_MEASURES) {
    const s = summarise(st.figures[m.key] ?? []);
    const c = m.ceiling ? med(m.ceiling) : undefined;
    const share = s && c ? s.median / c : undefined;
    const target = m.key.startsWith('consume-nightshift') || m.key === 'publish-nightshift' ? '≥ 50 % of raw' : '';
    out.push(
      `| ${m.label} | ${cell(s, 'jobs/s')} | ${m.ceiling ? (share === undefined ? '–' : `${Math.round(share * 100)} %`) : 'ceiling'} | ${target} | ${target && share !== undefined ? (share >= 0.5 ? 'yes' : 'no') : ''} |`,
    );
  }
  return out;
}
