import type { SearchJobsOptions } from '../../index.js';
import type { BulkActionName } from '../bulk.js';
import { html } from '../html.js';
import { definePage } from '../page.js';
import { actionForm, here, table, when } from './format.js';
import { jobsFilter } from './job-filter.js';

/** Bulk actions: each one's progress (live), and a way to stop it. */
export const bulkPage = definePage({
  id: 'bulk',
  title: 'Bulk actions',
  path: '/bulk',
  async load({ bulk }) {
    return { runs: bulk.list() };
  },
  render({ runs }, view) {
    const now = Date.now();
    const back = here(view, '/bulk');
    return html`<h1>Bulk actions</h1>
      <div data-live="bulk">
        ${table(
          ['#', 'action', 'on', 'by', 'progress', 'state', 'started', ''],
          runs.map(
            (r) =>
              html`<tr data-bulk="${r.id}">
                <td>${r.id}</td>
                <td>${r.action}</td>
                <td>${r.target}</td>
                <td>${r.actor}${r.reason ? html` <span class="muted">(${r.reason})</span>` : ''}</td>
                <td><progress max="${Math.max(r.total, r.done, 1)}" value="${r.done}"></progress> <span class="bulk-done">${r.done}</span> of ${r.total}${r.totalCapped ? '+' : ''}</td>
                <td class="bulk-state">${r.state}${r.error ? html` <span class="bad">${r.error}</span>` : ''}</td>
                <td>${when(r.startedAt, now)}</td>
                <td>${r.state === 'running' && view.can('bulk') ? actionForm(view, { page: 'bulk', action: 'stop', label: 'stop', fields: { id: String(r.id) }, back, id: `stop-${r.id}` }) : ''}</td>
              </tr>`,
          ),
          'No bulk action has run since this dashboard started.',
        )}
      </div>`;
  },
  actions: {
    start: {
      permission: 'bulk',
      async run({ bulk, user, form }) {
        const action = form.get('action') as BulkActionName;
        if (action !== 'retry' && action !== 'cancel') return { flash: 'unknown bulk action' };
        const reason = form.get('reason')?.trim() || null;
        const back = form.get('back') ?? '/jobs';
        if (form.get('scope') === 'filter') {
          const q = new URLSearchParams();
          for (const [k, v] of form) if (k.startsWith('f_') && v) q.set(k.slice(2), v);
          const f = jobsFilter(q);
          const filter = f.search as SearchJobsOptions;
          const describe =
            Object.entries(f.text)
              .filter(([, v]) => v)
              .map(([k, v]) => `${k}=${v}`)
              .join(' ') || 'every job';
          const id = await bulk.start({ action, target: { filter }, actor: user.name, reason, describe });
          return { redirect: back.replace(/\/jobs(\?.*)?$/, '/bulk'), flash: `bulk ${action} #${id} started` };
        }
        const ids = form.getAll('ids').filter((v) => /^[1-9][0-9]{0,18}$/.test(v));
        if (ids.length === 0) return { flash: 'select jobs first, or choose "every job matching this filter"' };
        const id = await bulk.start({ action, target: { ids }, actor: user.name, reason, describe: `${ids.length} selected jobs` });
        return { redirect: back.replace(/\/jobs(\?.*)?$/, '/bulk'), flash: `bulk ${action} #${id} started` };
      },
    },
    stop: {
      permission: 'bulk',
      async run({ bulk, form }) {
        const id = Number(form.get('id'));
        return { flash: bulk.stop(id) ? `stopping bulk action #${id}` : `bulk action #${id} is not running` };
      },
    },
  },
});
