import { html } from '../html.js';
import { definePage, type DashboardAction } from '../page.js';
import { actionForm, here, state, table, when } from './format.js';

function scheduleAction(kind: 'trigger' | 'pause' | 'resume'): DashboardAction {
  return {
    permission: 'act',
    async run({ api, user, form }) {
      const name = form.get('schedule') ?? '';
      const reason = form.get('reason')?.trim();
      const o = { actor: user.name, ...(reason ? { reason } : {}) };
      if (kind === 'trigger') {
        const r = await api.triggerSchedule(name, undefined, o);
        return { flash: `triggered ${name}: job ${r.jobId}` };
      }
      if (kind === 'pause') await api.pauseSchedule(name, o);
      else await api.resumeSchedule(name, o);
      return { flash: `${kind === 'pause' ? 'paused' : 'resumed'} schedule ${name}` };
    },
  };
}

/** Schedules: timing, next and last runs, tick history; trigger now, pause, resume. */
export const schedulesPage = definePage({
  id: 'schedules',
  title: 'Schedules',
  path: '/schedules',
  async load({ api, query }) {
    const schedules = await api.listSchedules({ next: 3 });
    const name = query.get('ticks');
    const ticks = name ? await api.scheduleTicks(name, { limit: 50 }) : [];
    return { schedules, ticks, name };
  },
  render({ schedules, ticks, name }, view) {
    const now = Date.now();
    const back = here(view, '/schedules');
    const rows = schedules.map(
      (s) =>
        html`<tr data-schedule="${s.name}">
          <td><a href="${view.href('/schedules', { ticks: s.name })}">${s.name}</a></td>
          <td>${s.spec ?? '–'}</td>
          <td>${s.kind ?? '–'}</td>
          <td class="schedule-state">${s.paused ? html`<span class="warn">paused</span>` : s.defined ? 'active' : html`<span class="muted">not defined here</span>`}</td>
          <td>${s.nextRuns.map((d) => html`${when(d, now)} `)}</td>
          <td>
            ${s.lastTick ? html`${when(s.lastTick.at, now)} ${s.lastTick.outcome} ${s.lastTick.jobId ? html`<a href="${view.href(`/jobs/${s.lastTick.jobId}`)}">job ${s.lastTick.jobId}</a>` : ''} ${s.lastTick.jobState ? state(s.lastTick.jobState) : ''}` : '–'}
          </td>
          <td>
            ${
              view.can('act')
                ? html`${s.defined ? actionForm(view, { page: 'schedules', action: 'trigger', label: 'trigger now', fields: { schedule: s.name }, back, id: `trigger-${s.name}` }) : ''}
                  ${
                    s.paused
                      ? actionForm(view, { page: 'schedules', action: 'resume', label: 'resume', fields: { schedule: s.name }, back })
                      : actionForm(view, { page: 'schedules', action: 'pause', label: 'pause', fields: { schedule: s.name }, back, confirm: `Pause schedule ${s.name}?` })
                  }`
                : ''
            }
          </td>
        </tr>`,
    );
    return html`<h1>Schedules</h1>
      <div data-live="schedules">
        ${table(['schedule', 'timing', 'kind', 'state', 'next runs', 'last tick', ''], rows, 'No schedule is defined.')}
        ${
          name
            ? html`<h2>Ticks of ${name}</h2>
                ${table(
                  ['tick', 'outcome', 'job', 'missed', 'error'],
                  ticks.map(
                    (t) =>
                      html`<tr>
                        <td>${when(t.at, now)}</td>
                        <td>${t.outcome}</td>
                        <td>${t.jobId ? html`<a href="${view.href(`/jobs/${t.jobId}`)}">${t.jobId}</a> ${t.jobState ? state(t.jobState) : ''}` : '–'}</td>
                        <td>${t.missed || ''}</td>
                        <td>${t.error ?? ''}</td>
                      </tr>`,
                  ),
                  'No tick yet.',
                )}`
            : ''
        }
      </div>`;
  },
  actions: { trigger: scheduleAction('trigger'), pause: scheduleAction('pause'), resume: scheduleAction('resume') },
});
