import type { Nightshift, PipelineRunDetail, PipelineStepInfo } from '../../index.js';
import { html, type Html } from '../html.js';
import { definePage, type ActionResult, type DashboardAction, type ViewContext } from '../page.js';
import { stepGraph } from '../step-graph.js';
import { actionForm, state as jobStateBadge, json, ms, table, when } from './format.js';
import { runState } from './pipelines.js';

type Who = { actor: string; reason?: string; runId: string };

/** An action on one run, named by the form's pipeline, key and run id; audited with the signed-in user. */
function runAction(run: (api: Nightshift, pipeline: string, key: string, who: Who, form: URLSearchParams) => Promise<ActionResult | string>): DashboardAction {
  return {
    permission: 'act',
    async run({ api, user, form }) {
      const pipeline = form.get('pipeline') ?? '';
      const key = form.get('key') ?? '';
      const reason = form.get('reason')?.trim();
      const out = await run(api, pipeline, key, { actor: user.name, runId: form.get('runId') ?? '', ...(reason ? { reason } : {}) }, form);
      return typeof out === 'string' ? { flash: out } : out;
    },
  };
}

const stepClass: Record<string, string> = { succeeded: 'ok', failed: 'bad', cancelled: 'muted', skipped: 'muted', running: '', ready: '', blocked: 'muted' };

function errorText(e: Record<string, unknown> | null): string {
  if (!e) return '';
  return typeof e.message === 'string' ? e.message : JSON.stringify(e);
}

function jobLink(view: ViewContext, id: string | null, jobState: string | null): Html {
  if (!id) return html`<span class="muted">–</span>`;
  return html`<a href="${view.href(`/jobs/${id}`)}">${id}</a> ${jobState ? jobStateBadge(jobState) : ''}`;
}

function stepRow(s: PipelineStepInfo, view: ViewContext, now: number): Html {
  const payloads = view.can('payloads');
  const items = s.items
    ? html`<details>
        <summary>
          ${s.items.total} items:
          ${Object.entries(s.items.byState)
            .map(([k, v]) => `${v} ${k}`)
            .join(', ')}
        </summary>
        ${table(
          ['item', 'state', 'attempts', 'job', 'took', 'error'],
          s.items.list.slice(0, 200).map(
            (i) =>
              html`<tr>
                <td>${i.key}</td>
                <td class="${stepClass[i.state] ?? ''}">${i.state}</td>
                <td>${i.attempts}</td>
                <td>${jobLink(view, i.jobId, i.jobState)}</td>
                <td>${i.startedAt && i.finishedAt ? ms(i.finishedAt.getTime() - i.startedAt.getTime()) : '–'}</td>
                <td class="error-message">${errorText(i.error)}</td>
              </tr>`,
          ),
          'No item yet.',
        )}
      </details>`
    : '';
  return html`<tr id="step-${s.name}" data-step-row="${s.name}">
    <td><b>${s.name}</b>${s.optional ? html` <span class="muted">optional</span>` : ''}${s.effect ? html` <span class="muted">effect</span>` : ''}</td>
    <td class="step-state ${stepClass[s.state] ?? ''}">${s.state}</td>
    <td>${s.attempts}</td>
    <td>${jobLink(view, s.jobId, s.jobState)}</td>
    <td>${when(s.startedAt, now)}</td>
    <td>${when(s.finishedAt, now)}</td>
    <td>${ms(s.durationMs)}</td>
    <td>
      <div class="error-message">${errorText(s.error)}</div>
      ${items}
      ${
        payloads && s.output !== null && s.output !== undefined
          ? html`<details>
              <summary>output (${s.outputBytes ?? 0} B)</summary>
              ${json(s.output)}
            </details>`
          : ''
      }
    </td>
  </tr>`;
}

function actions(r: PipelineRunDetail, view: ViewContext): Html {
  if (!view.can('act')) return html``;
  const b = view.href(`/pipelines/runs/${r.id}`);
  const fields = { pipeline: r.pipeline, key: r.key, runId: r.id };
  const out: Html[] = [];
  if (r.state === 'failed' || r.state === 'cancelled' || r.state === 'held') out.push(actionForm(view, { page: 'run', action: 'rerun', label: 'rerun', fields, back: b, reason: true, id: 'rerun' }));
  if (r.state === 'running' || r.state === 'held')
    out.push(actionForm(view, { page: 'run', action: 'cancel', label: 'cancel', fields, back: b, reason: true, confirm: `Cancel run ${r.id}?`, id: 'cancel-run' }));
  if (r.state !== 'running') {
    const select = { name: 'from', label: 'restart from step', options: r.stepList.map((s) => s.name) };
    const confirm = 'Run this step and every step after it again, as a new generation?';
    out.push(
      actionForm(view, { page: 'run', action: 'restart', label: 'restart from', fields, back: b, select, reason: true, reasonLabel: 'reason for restart', confirm, id: 'restart', formId: 'restart-form' }),
    );
  }
  if (r.artifacts.length) out.push(actionForm(view, { page: 'run', action: 'verify', label: 'verify artifacts', fields, back: b, id: 'verify' }));
  if (r.dryRun && r.state !== 'running' && r.state !== 'held') {
    out.push(actionForm(view, { page: 'run', action: 'cleanup', label: 'clean up dry run', fields, back: b, confirm: `Delete dry run ${r.id}, its steps and artifacts?`, id: 'cleanup' }));
  }
  return html`<p class="actions">${out}</p>`;
}

/** One pipeline run: the step graph, every step's state and timings, items, artifacts with verify, history, audit; rerun, restart from a step, cancel, clean up a dry run. */
export const pipelineRunPage = definePage({
  id: 'run',
  title: 'Pipeline run',
  path: '/pipelines/runs/:id',
  nav: false,
  async load({ api, params }) {
    const run = await api.pipelines.getRunById(params.id ?? '');
    const audit = await api.listAudit({ target: `pipeline:${run.pipeline}:${run.key}`, limit: 20 });
    return { run, audit };
  },
  render({ run: r, audit }, view) {
    const now = Date.now();
    return html`<h1>
        <a href="${view.href('/pipelines', { pipeline: r.pipeline })}">${r.pipeline}</a> · <a href="${view.href('/pipelines', { pipeline: r.pipeline, key: r.key })}">${r.key}</a> · run ${r.id}
        <span data-live="run-state">${runState(r.state)}</span>
      </h1>
      ${actions(r, view)}
      <div data-live="run">
        <p>
          ${r.dryRun ? html`<b class="warn">dry run</b> · ` : ''}generation ${r.generation} · ${r.steps.done}/${r.steps.total} steps ended · started ${when(r.createdAt, now)} by ${r.startedBy ?? '–'} ·
          ${r.finishedAt ? html`finished ${when(r.finishedAt, now)} after ${ms(r.finishedAt.getTime() - r.createdAt.getTime())}` : 'not finished'}
          ${r.deadlineAt ? html` · deadline ${when(r.deadlineAt, now)}${r.deadlineMissedAt ? html` <span class="bad">missed</span>` : ''}` : ''}
          ${r.warnings ? html` · <span class="warn">${r.warnings} optional failures</span>` : ''}
        </p>
        ${r.reason ? html`<p class="run-reason ${r.state === 'failed' ? 'bad' : 'warn'}">${r.reason}</p>` : ''} ${stepGraph(r.stepList)}
        <h2>Steps</h2>
        ${table(
          ['step', 'state', 'attempts', 'job', 'started', 'finished', 'took', 'error, items, output'],
          r.stepList.map((s) => stepRow(s, view, now)),
          'No step.',
        )}
        <h2>Artifacts</h2>
        ${table(
          ['name', 'step', 'generation', 'size', 'SHA-256', 'location', 'verified'],
          r.artifacts.map(
            (a) =>
              html`<tr data-artifact="${a.name}" class="${a.current ? '' : 'muted'}">
                <td>${a.name}${a.item ? html` <span class="muted">${a.item}</span>` : ''}</td>
                <td>${a.step}</td>
                <td>${a.generation}${a.current ? '' : ' (superseded)'}</td>
                <td>${a.size.toLocaleString('en')} B</td>
                <td title="${a.sha256}"><code>${a.sha256.slice(0, 12)}…</code></td>
                <td><code>${a.location}</code></td>
                <td>${when(a.verifiedAt, now)}</td>
              </tr>`,
          ),
          'No artifact.',
        )}
        ${
          r.history.length
            ? html`<h2>Earlier generations</h2>
                ${table(
                  ['generation', 'step', 'item', 'state', 'attempts', 'job', 'error'],
                  r.history.slice(0, 200).map(
                    (h) =>
                      html`<tr>
                        <td>${h.generation}</td>
                        <td>${h.step}</td>
                        <td>${h.item}</td>
                        <td>${h.state}</td>
                        <td>${h.attempts}</td>
                        <td>${jobLink(view, h.jobId, null)}</td>
                        <td class="error-message">${errorText(h.error)}</td>
                      </tr>`,
                  ),
                  '',
                )}`
            : ''
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
          'No action on this key yet.',
        )}
      </div>`;
  },
  actions: {
    rerun: runAction(async (api, p, k, who) => `rerun of ${p} ${k}: ${(await api.pipelines.rerun(p, k, who)).state}`),
    cancel: runAction(async (api, p, k, who) => `cancelled run ${(await api.pipelines.cancel(p, k, who)).id}`),
    restart: runAction(async (api, p, k, who, form) => {
      const run = await api.pipelines.restart(p, k, { ...who, from: form.get('from') ?? '' });
      return `restarted ${p} ${k} from ${form.get('from') ?? ''}: generation ${run.generation}`;
    }),
    verify: runAction(async (api, p, k, who) => {
      const v = await api.pipelines.verify(p, k, who);
      const bad = v.artifacts.filter((a) => a.status !== 'ok');
      return v.ok ? `verified ${v.artifacts.length} artifacts: all match` : `verify: ${bad.map((a) => `${a.name} ${a.status}`).join(', ')}`;
    }),
    cleanup: runAction(async (api, p, k, who, form) => {
      const { removed } = await api.pipelines.cleanup(p, k, { actor: who.actor, runId: who.runId, ...(who.reason ? { reason: who.reason } : {}) });
      // The run's page is gone: back to the key's runs (the form's way back, without the run).
      const list = (form.get('back') ?? '').replace(/\/runs\/[0-9]+$/, '');
      return { flash: `removed dry run ${removed.join(', ')}`, redirect: `${list}?${new URLSearchParams({ pipeline: p, key: k }).toString()}` };
    }),
  },
});
