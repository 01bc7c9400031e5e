import type { JobRecord } from '../../index.js';
import { html, type Html } from '../html.js';
import { definePage, type ActionResult, type DashboardAction } from '../page.js';
import { actionForm, json, ms, state, table, when } from './format.js';
import { jobId } from './jobs.js';
import { jobLimitsSection } from './limits.js';

const back = (id: string, href: (p: string) => string) => href(`/jobs/${id}`);

function jobAction(
  permission: DashboardAction['permission'],
  run: (api: Parameters<DashboardAction['run']>[0]['api'], id: string, o: { actor: string; reason?: string }, form: URLSearchParams) => Promise<unknown>,
  done: string,
): DashboardAction {
  return {
    permission,
    async run({ api, user, form }): Promise<ActionResult> {
      const id = jobId(form.get('id') ?? undefined);
      const reason = form.get('reason')?.trim();
      await run(api, id, { actor: user.name, ...(reason ? { reason } : {}) }, form);
      return { flash: `${done} job ${id}` };
    },
  };
}

/** The timeline of a job: what its record says happened, in order. */
function timeline(j: JobRecord): { at: Date; what: string }[] {
  const out: { at: Date; what: string }[] = [{ at: j.createdAt, what: 'enqueued' }];
  for (const e of j.errors) out.push({ at: new Date(e.at), what: `attempt ${e.attempt}: ${e.kind}` });
  if (j.startedAt) out.push({ at: j.startedAt, what: `attempt ${j.attempt} started` });
  if (j.finishedAt) out.push({ at: j.finishedAt, what: j.state });
  return out.sort((a, b) => a.at.getTime() - b.at.getTime());
}

/** One job: timeline, attempts with error and stack, log, payload (permission), lease and fencing token, trace; retry, cancel, resolve. */
export const jobPage = definePage({
  id: 'job',
  title: 'Job',
  path: '/jobs/:id',
  nav: false,
  async load({ api, params }) {
    const id = jobId(params.id);
    const job = await api.getJob(id);
    const [logs, audit, limits] = await Promise.all([api.jobLogs(id, { limit: 200 }), api.listAudit({ target: `job:${id}`, limit: 20 }), api.jobLimits(id)]);
    return { job, logs, audit, limits };
  },
  render({ job: j, logs, audit, limits }, view) {
    const now = Date.now();
    const href = (p: string) => view.href(p);
    const b = back(j.id, href);
    const payloads = view.can('payloads');
    const trace = j.traceContext?.traceparent?.split('-')[1] ?? null;
    const acts: Html[] = [];
    if (view.can('act')) {
      if (['discarded', 'cancelled', 'expired', 'abandoned', 'held', 'completed'].includes(j.state))
        acts.push(actionForm(view, { page: 'job', action: 'retry', label: 'retry', fields: { id: j.id }, back: b, reason: true, id: 'retry' }));
      if (['available', 'running', 'held', 'abandoned'].includes(j.state))
        acts.push(actionForm(view, { page: 'job', action: 'cancel', label: 'cancel', fields: { id: j.id }, back: b, reason: true, confirm: 'Cancel this job?', id: 'cancel' }));
      if (j.state === 'available' && j.runAt.getTime() > now) acts.push(actionForm(view, { page: 'job', action: 'run-now', label: 'run now', fields: { id: j.id }, back: b }));
    }
    if (view.can('resolve') && (j.state === 'held' || j.state === 'abandoned')) {
      const select = { name: 'as', label: 'resolve as', options: ['completed', 'failed', 'retry'] };
      acts.push(
        actionForm(view, {
          page: 'job',
          action: 'resolve',
          label: 'resolve',
          fields: { id: j.id },
          back: b,
          select,
          reason: 'required',
          reasonLabel: 'reason for resolving',
          id: 'resolve',
          formId: 'resolve-form',
        }),
      );
    }
    return html`<h1>Job ${j.id} <span data-live="state">${state(j.state)}</span></h1>
      <p>${acts}</p>
      <div data-live="job">
        <table>
          <tbody>
            <tr>
              <th>kind</th>
              <td>${j.kind}</td>
              <th>queue</th>
              <td>${j.queue}</td>
            </tr>
            <tr>
              <th>attempt</th>
              <td>${j.attempt} of ${j.maxAttempts}</td>
              <th>delivery</th>
              <td>${j.delivery}</td>
            </tr>
            <tr>
              <th>due</th>
              <td>${when(j.runAt, now)}</td>
              <th>priority</th>
              <td>${j.priority}</td>
            </tr>
            <tr>
              <th>dedupe key</th>
              <td>${j.dedupeKey ?? '–'} ${j.dedupeScope ? html`<span class="muted">(${j.dedupeScope})</span>` : ''}</td>
              <th>expires</th>
              <td>${when(j.expiresAt, now)}</td>
            </tr>
            <tr>
              <th>lease holder</th>
              <td id="lease-owner">${j.leaseOwner ?? '–'}</td>
              <th>fencing token</th>
              <td>${j.leaseToken ?? '–'} ${j.leaseExpiresAt ? html`<span class="muted">until ${when(j.leaseExpiresAt, now)}</span>` : ''}</td>
            </tr>
            <tr>
              <th>trace id</th>
              <td>${trace ?? '–'}</td>
              <th>reason</th>
              <td id="job-reason">${j.reason ?? '–'}</td>
            </tr>
          </tbody>
        </table>
        ${jobLimitsSection(j, limits, view)}
        <h2>Timeline</h2>
        ${table(
          ['when', 'what'],
          timeline(j).map(
            (e) =>
              html`<tr>
                <td>${when(e.at, now)}</td>
                <td>${e.what}</td>
              </tr>`,
          ),
          'Nothing yet.',
        )}
        <h2>Attempts</h2>
        ${table(
          ['attempt', 'when', 'kind', 'error'],
          j.errors.map(
            (e) =>
              html`<tr class="attempt">
                <td>${e.attempt}</td>
                <td>${when(e.at, now)}</td>
                <td>${e.kind}${e.code ? html` <span class="muted">${e.code}</span>` : ''}</td>
                <td>
                  <div class="error-message">${e.message}</div>
                  ${
                    e.stack
                      ? html`<details>
                          <summary>stack</summary>
                          <pre>${e.stack}</pre>
                        </details>`
                      : ''
                  }
                </td>
              </tr>`,
          ),
          'No failed attempt.',
        )}
        <h2>Payload, progress and log</h2>
        ${
          payloads
            ? html`<div id="payload">${json(j.payload)}</div>
                ${
                  j.progress !== null
                    ? html`<h3>progress</h3>
                        ${json(j.progress)}`
                    : ''
                }
                ${table(
                  ['attempt', 'when', 'level', 'message', 'fields'],
                  logs.map(
                    (l) =>
                      html`<tr>
                        <td>${l.attempt}</td>
                        <td>${when(l.at, now)}</td>
                        <td>${l.level}</td>
                        <td>${l.msg}</td>
                        <td>${l.fields ? JSON.stringify(l.fields) : ''}</td>
                      </tr>`,
                  ),
                  'The handler logged nothing.',
                )}`
            : html`<p class="muted" id="payload-hidden">Payload, progress and log are hidden: this user lacks the "payloads" permission.</p>`
        }
        <h2>Audit</h2>
        ${table(
          ['when', 'who', 'action', 'reason'],
          audit.map(
            (a) =>
              html`<tr>
                <td>${when(a.at, now)}</td>
                <td>${a.actor}</td>
                <td>${a.action}</td>
                <td>${a.reason ?? ''}</td>
              </tr>`,
          ),
          'No operator action on this job.',
        )}
      </div>
      <p class="muted">Job durations: ${j.startedAt && j.finishedAt ? ms(j.finishedAt.getTime() - j.startedAt.getTime()) : '–'}</p>`;
  },
  actions: {
    retry: jobAction('act', (api, id, o) => api.retryJob(id, o), 'retried'),
    cancel: jobAction('act', (api, id, o) => api.cancelJob(id, o), 'cancelled'),
    'run-now': jobAction('act', (api, id, o) => api.runJobNow(id, o), 'ran now'),
    resolve: jobAction('resolve', (api, id, o, form) => api.resolveJob(id, { ...o, as: form.get('as') as 'completed' }), 'resolved'),
  },
});
