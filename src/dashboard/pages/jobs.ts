import { JOB_STATES, OptionsInvalidError, type JobRecord } from '../../index.js';
import { html } from '../html.js';
import { definePage } from '../page.js';
import { count, here, state, table, when } from './format.js';
import { jobsFilter, SINCE_CHOICES } from './job-filter.js';

const PAGE = 50;

/** The jobs list: by state, queue, kind, time and payload field, paged; bulk actions on the selection or the filter. */
export const jobsPage = definePage({
  id: 'jobs',
  title: 'Jobs',
  path: '/jobs',
  // Selections would be lost by an update in place.
  live: false,
  async load({ api, query, settings }) {
    const f = jobsFilter(query);
    const before = query.get('before') ?? undefined;
    const search = { ...f.search, window: settings.searchWindow };
    const [jobs, total] = await Promise.all([api.searchJobs({ ...search, limit: PAGE, ...(before ? { beforeId: before } : {}) }), api.countJobs({ ...search, cap: settings.countCap })]);
    return { jobs, total, filter: f, cap: settings.countCap, window: settings.searchWindow };
  },
  render(d, view) {
    const t = d.filter.text;
    const now = Date.now();
    const back = here(view, '/jobs');
    const rows = d.jobs.map(
      (j: JobRecord) =>
        html`<tr data-job="${j.id}">
          <td><input type="checkbox" name="ids" value="${j.id}" form="bulk" aria-label="select job ${j.id}" /></td>
          <td><a href="${view.href(`/jobs/${j.id}`)}">${j.id}</a></td>
          <td>${j.kind}</td>
          <td>${j.queue}</td>
          <td>${state(j.state)}</td>
          <td>${j.attempt}/${j.maxAttempts}</td>
          <td>${when(j.createdAt, now)}</td>
          <td>${when(j.finishedAt ?? j.runAt, now)}</td>
          <td class="muted">${j.errors.at(-1)?.kind ?? ''}</td>
        </tr>`,
    );
    const last = d.jobs.at(-1);
    const canBulk = view.can('bulk');
    return html`<h1>Jobs</h1>
      <form class="filters" method="get" action="${view.href('/jobs')}">
        <label
          >state
          <select name="state">
            <option value="">any</option>
            ${JOB_STATES.map((s) => html`<option value="${s}" ${t.state === s ? 'selected' : ''}>${s}</option>`)}
          </select></label
        >
        <label>queue <input name="queue" value="${t.queue}" /></label>
        <label>kind <input name="kind" value="${t.kind}" /></label>
        <label
          >created within
          <select name="since">
            <option value="">any time</option>
            ${SINCE_CHOICES.map((s) => html`<option value="${s}" ${t.since === s ? 'selected' : ''}>${s}</option>`)}
          </select></label
        >
        <label>payload <input name="q" value="${t.q}" size="32" placeholder="payload.orderId:o-1" /></label>
        <button type="submit" id="search">search</button>
      </form>
      <p class="muted" id="job-count">
        ${count(d.total, d.cap)} matching${d.filter.search.state && d.filter.search.state.length ? '' : ''} · finished jobs are searched among the newest ${d.window.toLocaleString('en')}
      </p>
      ${table(['', 'id', 'kind', 'queue', 'state', 'attempt', 'created', 'due / finished', 'last error'], rows, 'No job matches.')}
      ${last && d.jobs.length === PAGE ? html`<p><a href="${view.href('/jobs', { ...t, before: last.id })}">older →</a></p>` : ''}
      ${
        canBulk
          ? html`<h2>Bulk action</h2>
              <form id="bulk" method="post" action="${view.href('/actions/bulk/start')}" data-confirm="Run this bulk action?">
                ${view.csrf}<input type="hidden" name="back" value="${back}" />
                ${Object.entries(t).map(([k, v]) => html`<input type="hidden" name="f_${k}" value="${v}" />`)}
                <label
                  >action
                  <select name="action">
                    <option value="retry">retry</option>
                    <option value="cancel">cancel</option>
                  </select></label
                >
                <label
                  >on
                  <select name="scope">
                    <option value="selected">the selected jobs</option>
                    <option value="filter">every job matching this filter (${count(d.total, d.cap)})</option>
                  </select></label
                >
                <input name="reason" placeholder="reason" maxlength="500" aria-label="reason for the bulk action" />
                <button type="submit" id="bulk-start">start</button>
              </form>`
          : ''
      }`;
  },
});

/** Refuses a job id that is not one, before the API does, with the same error. */
export function jobId(id: string | undefined): string {
  if (!id || !/^[1-9][0-9]{0,18}$/.test(id)) throw new OptionsInvalidError('job id', [{ path: 'id', message: 'must be a job id' }]);
  return id;
}
