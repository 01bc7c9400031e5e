import { html } from '../html.js';
import { definePage, type DashboardAction } from '../page.js';
import { actionForm, here, ms, table, when } from './format.js';

function queueAction(paused: boolean): DashboardAction {
  return {
    permission: 'act',
    async run({ api, user, form }) {
      const name = form.get('queue') ?? '';
      const reason = form.get('reason')?.trim();
      const o = { actor: user.name, ...(reason ? { reason } : {}) };
      if (paused) await api.pauseQueue(name, o);
      else await api.resumeQueue(name, o);
      return { flash: `${paused ? 'paused' : 'resumed'} queue ${name}` };
    },
  };
}

/** Queues: counts, the last hour's rate and failures, the oldest due job; pause and resume. */
export const queuesPage = definePage({
  id: 'queues',
  title: 'Queues',
  path: '/queues',
  async load({ api }) {
    const [queues, activity] = await Promise.all([api.listQueues(), api.queueActivity({ minutes: 60 })]);
    return { queues, activity };
  },
  render({ queues, activity }, view) {
    const now = Date.now();
    const back = here(view, '/queues');
    const act = new Map(activity.map((a) => [a.queue, a]));
    const rows = queues.map((q) => {
      const a = act.get(q.name);
      return html`<tr data-queue="${q.name}">
        <td><a href="${view.href('/jobs', { queue: q.name })}">${q.name}</a></td>
        <td class="queue-state">${q.paused ? html`<span class="warn">paused</span>` : 'active'}</td>
        <td>${q.available}</td>
        <td>${q.scheduled}</td>
        <td>${q.running}</td>
        <td>${q.held ? html`<a href="${view.href('/jobs', { queue: q.name, state: 'held' })}">${q.held}</a>` : 0}</td>
        <td>${q.failed}</td>
        <td>${a ? (a.completed / 60).toFixed(1) : '0.0'}/min</td>
        <td>${a?.failed ?? 0}</td>
        <td>${ms(a?.waitMsAvg)}</td>
        <td>${when(q.oldestAvailable, now)}</td>
        <td>
          ${
            view.can('act')
              ? q.paused
                ? actionForm(view, { page: 'queues', action: 'resume', label: 'resume', fields: { queue: q.name }, back, id: `resume-${q.name}` })
                : actionForm(view, { page: 'queues', action: 'pause', label: 'pause', fields: { queue: q.name }, back, confirm: `Pause queue ${q.name} on every process?`, id: `pause-${q.name}` })
              : ''
          }
        </td>
      </tr>`;
    });
    return html`<h1>Queues</h1>
      <div data-live="queues">
        ${table(['queue', 'state', 'due', 'scheduled', 'running', 'held', 'discarded', 'completed (1 h)', 'failed (1 h)', 'mean wait (1 h)', 'oldest due', ''], rows, 'No queue has jobs yet.')}
      </div>`;
  },
  actions: { pause: queueAction(true), resume: queueAction(false) },
});
