import type { ProcessRecord, QueueRecord } from '../../index.js';
import { html } from '../html.js';
import { definePage } from '../page.js';
import { table, when } from './format.js';

/** Queues with jobs due or running that no live process claims from: nothing will run them. */
export function consumerWarnings(queues: readonly QueueRecord[], processes: readonly ProcessRecord[]): Set<string> {
  const served = new Set(processes.flatMap((p) => (Array.isArray(p.info.queues) ? (p.info.queues as string[]) : [])));
  return new Set(queues.filter((q) => q.available + q.scheduled > 0 && !served.has(q.name)).map((q) => q.name));
}

/** Processes of the fleet: host, pid, roles, version, what each hosts, last seen; queues and stream groups no one consumes. */
export const processesPage = definePage({
  id: 'processes',
  title: 'Processes',
  path: '/processes',
  async load({ api }) {
    const [processes, queues] = await Promise.all([api.listProcesses(), api.listQueues()]);
    let groups: { stream: string; group: string; text: string }[] = [];
    if (api.options.redisUrl && api.options.streams.length > 0) {
      const d = await api.diagnoseStreams().catch(() => undefined);
      groups = (d?.streams ?? []).flatMap((s) => s.groups.filter((g) => g.consumers.length === 0).map((g) => ({ stream: s.stream, group: g.group, text: g.statusText })));
    }
    return { processes, queues, groups };
  },
  render({ processes, queues, groups }) {
    const now = Date.now();
    const idle = consumerWarnings(queues, processes);
    const list = (v: unknown) => (Array.isArray(v) ? (v as string[]).join(', ') : '');
    return html`<h1>Processes</h1>
      <div data-live="processes">
        ${[...idle].map((q) => html`<div class="flash error warning" data-warning="queue">Queue <b>${q}</b> has jobs waiting and no live process claims from it.</div>`)}
        ${groups.map((g) => html`<div class="flash error warning" data-warning="group">Stream ${g.stream}, group ${g.group}: no consumer. ${g.text}</div>`)}
        ${table(
          ['host', 'pid', 'roles', 'version', 'queues', 'schedules', 'daemons', 'consumers', 'running', 'leading', 'started', 'last seen'],
          processes.map(
            (p) =>
              html`<tr>
                <td>${p.host}</td>
                <td>${p.pid}</td>
                <td>${p.roles.join(', ')}</td>
                <td>${p.version}</td>
                <td>${list(p.info.queues)}</td>
                <td>${list(p.info.schedules)}</td>
                <td>${list(p.info.daemons)}</td>
                <td>${list(p.info.consumers)}</td>
                <td>${String(p.info.running ?? '')}/${String(p.info.concurrency ?? '')}</td>
                <td>${list(p.info.leading)}</td>
                <td>${when(p.startedAt, now)}</td>
                <td>${Math.round(p.secondsSinceSeen)}s ago</td>
              </tr>`,
          ),
          'No process is registered: no worker is running.',
        )}
      </div>`;
  },
});
