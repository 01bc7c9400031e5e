import type { StatsRange } from '../../index.js';
import { seriesChart } from '../charts.js';
import { html } from '../html.js';
import { definePage } from '../page.js';
import { state, table, when } from './format.js';
import { consumerWarnings } from './processes.js';

const RANGES: StatsRange[] = ['hour', 'day', 'week', 'month'];

/** The overview: throughput, failure and wait-time charts, problem queues, processes, recent failures. */
export const overviewPage = definePage({
  id: 'overview',
  title: 'Overview',
  path: '/',
  async load({ api, query, settings }) {
    const range = (RANGES.includes(query.get('range') as StatsRange) ? query.get('range') : 'hour') as StatsRange;
    const [points, queues, activity, processes, failures] = await Promise.all([
      api.jobStats({ range }),
      api.listQueues(),
      api.queueActivity({ minutes: 60 }),
      api.listProcesses(),
      api.searchJobs({ state: 'discarded', limit: 10, window: settings.searchWindow }),
    ]);
    return { range, points, queues, activity, processes, failures };
  },
  render(d, view) {
    const now = Date.now();
    const act = new Map(d.activity.map((a) => [a.queue, a]));
    const warnings = consumerWarnings(d.queues, d.processes);
    const problems = d.queues
      .map((q) => {
        const why: string[] = [];
        if (q.paused) why.push('paused');
        if (q.held > 0) why.push(`${q.held} held for an operator`);
        const failed = act.get(q.name)?.failed ?? 0;
        if (failed > 0) why.push(`${failed} failed attempts in the last hour`);
        if (q.oldestAvailable && now - new Date(q.oldestAvailable).getTime() > 60_000) why.push('oldest due job waiting over a minute');
        if (warnings.has(q.name)) why.push('no process consumes it');
        return { q, why };
      })
      .filter((p) => p.why.length > 0);
    return html`<h1>Overview</h1>
      <p>${RANGES.map((r) => (r === d.range ? html`<b>${r}</b> ` : html`<a href="${view.href('/', { range: r })}">${r}</a> `))}</p>
      <div data-live="overview">
        <div class="cards">
          <div class="card">processes<b>${d.processes.length}</b></div>
          <div class="card">due now<b>${d.queues.reduce((a, q) => a + q.available, 0)}</b></div>
          <div class="card">running<b>${d.queues.reduce((a, q) => a + q.running, 0)}</b></div>
          <div class="card">held<b>${d.queues.reduce((a, q) => a + q.held, 0)}</b></div>
        </div>
        ${seriesChart({
          title: `Throughput (per ${d.range === 'hour' ? 'minute' : d.range === 'day' ? '10 minutes' : d.range === 'week' ? 'hour' : '6 hours'})`,
          points: d.points,
          lines: [
            { name: 'completed', value: (p) => p.completed, color: '#1a7f37' },
            { name: 'failed', value: (p) => p.failed, color: '#cf222e' },
          ],
        })}
        ${seriesChart({ title: 'Wait from due to start', points: d.points, unit: 'ms', lines: [{ name: 'mean wait', value: (p) => (p.waitMsAvg === null ? null : Math.round(p.waitMsAvg)), color: '#0969da' }] })}
        <h2>Problem queues</h2>
        ${table(
          ['queue', 'why'],
          problems.map(
            (p) =>
              html`<tr class="problem">
                <td><a href="${view.href('/jobs', { queue: p.q.name })}">${p.q.name}</a></td>
                <td>${p.why.join('; ')}</td>
              </tr>`,
          ),
          'No queue needs attention.',
        )}
        <h2>Recent failures</h2>
        ${table(
          ['job', 'kind', 'queue', 'state', 'finished', 'error'],
          d.failures.map(
            (j) =>
              html`<tr>
                <td><a href="${view.href(`/jobs/${j.id}`)}">${j.id}</a></td>
                <td>${j.kind}</td>
                <td>${j.queue}</td>
                <td>${state(j.state)}</td>
                <td>${when(j.finishedAt, now)}</td>
                <td class="muted">${j.errors.at(-1)?.kind ?? ''}</td>
              </tr>`,
          ),
          'No discarded job among the newest.',
        )}
      </div>`;
  },
});
