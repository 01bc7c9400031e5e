import { OptionsInvalidError, PIPELINE_RUN_STATES, type PipelineRun } from '../../index.js';
import { html, type Html } from '../html.js';
import { definePage } from '../page.js';
import { ms, table, when } from './format.js';

const PAGE = 50;

const RUN_CLASS: Record<string, string> = { succeeded: 'ok', failed: 'bad', held: 'warn', cancelled: 'muted', running: '' };

/** A run's state as a badge. */
export function runState(s: string): Html {
  return html`<span class="state ${RUN_CLASS[s] ?? ''}" data-state="${s}">${s}</span>`;
}

/** The filter of the runs list from its query string: pipeline, key, state, live or dry runs, page. */
export function runsFilter(query: URLSearchParams) {
  const text = { pipeline: query.get('pipeline') ?? '', key: query.get('key') ?? '', state: query.get('state') ?? '', dry: query.get('dry') ?? '' };
  if (text.state && !PIPELINE_RUN_STATES.includes(text.state as PipelineRun['state'])) {
    throw new OptionsInvalidError('pipeline runs filter', [{ path: 'state', message: `states are ${PIPELINE_RUN_STATES.join(', ')}` }]);
  }
  if (text.dry && text.dry !== 'live' && text.dry !== 'dry') throw new OptionsInvalidError('pipeline runs filter', [{ path: 'dry', message: 'must be live or dry' }]);
  return {
    text,
    options: {
      ...(text.pipeline ? { pipeline: text.pipeline } : {}),
      ...(text.key ? { key: text.key } : {}),
      ...(text.state ? { state: text.state as PipelineRun['state'] } : {}),
      ...(text.dry ? { dryRun: text.dry === 'dry' } : {}),
    },
  };
}

/** Pipeline runs by pipeline, key, state and live or dry, newest first, paged; each links to its run. */
export const pipelinesPage = definePage({
  id: 'pipelines',
  title: 'Pipelines',
  path: '/pipelines',
  async load({ api, query }) {
    const f = runsFilter(query);
    const before = query.get('before') || undefined;
    const runs = await api.pipelines.listRuns({ ...f.options, limit: PAGE + 1, ...(before ? { beforeId: before } : {}) });
    return { runs: runs.slice(0, PAGE), more: runs.length > PAGE, filter: f.text, names: api.pipelines.names };
  },
  render({ runs, more, filter, names }, view) {
    const now = Date.now();
    const opt = (value: string, current: string, label = value) => html`<option value="${value}" ${value === current ? 'selected' : ''}>${label}</option>`;
    const rows = runs.map(
      (r) =>
        html`<tr data-run="${r.id}" data-pipeline="${r.pipeline}" data-key="${r.key}">
          <td><a href="${view.href(`/pipelines/runs/${r.id}`)}">${r.id}</a></td>
          <td><a href="${view.href('/pipelines', { pipeline: r.pipeline })}">${r.pipeline}</a></td>
          <td><a href="${view.href('/pipelines', { pipeline: r.pipeline, key: r.key })}">${r.key}</a>${r.dryRun ? html` <span class="muted">dry run</span>` : ''}</td>
          <td class="run-state">${runState(r.state)}</td>
          <td>${r.steps.done}/${r.steps.total}</td>
          <td>${r.generation > 1 ? `gen ${r.generation}` : ''}${r.warnings ? html` <span class="warn">${r.warnings} warnings</span>` : ''}</td>
          <td>${when(r.createdAt, now)}</td>
          <td>${r.finishedAt ? ms(r.finishedAt.getTime() - r.createdAt.getTime()) : '–'}</td>
          <td class="muted">${r.reason ?? ''}</td>
        </tr>`,
    );
    const last = runs.at(-1);
    return html`<h1>Pipelines</h1>
      <form class="filters" method="get" action="${view.href('/pipelines')}">
        <label
          >pipeline
          <select name="pipeline">
            ${opt('', filter.pipeline, 'any')} ${[...new Set([...names, ...(filter.pipeline ? [filter.pipeline] : [])])].map((n) => opt(n, filter.pipeline))}
          </select></label
        >
        <label>key <input name="key" value="${filter.key}" placeholder="2024-06-01" /></label>
        <label
          >state
          <select name="state">
            ${opt('', filter.state, 'any')} ${PIPELINE_RUN_STATES.map((s) => opt(s, filter.state))}
          </select></label
        >
        <label
          >runs
          <select name="dry">
            ${opt('', filter.dry, 'live and dry')} ${opt('live', filter.dry, 'live only')} ${opt('dry', filter.dry, 'dry runs only')}
          </select></label
        >
        <button type="submit" id="filter-runs">filter</button>
      </form>
      <div data-live="runs">
        ${table(['run', 'pipeline', 'key', 'state', 'steps', '', 'started', 'took', 'reason'], rows, 'No run matches.')}
        ${more && last ? html`<p><a href="${view.href('/pipelines', { ...filter, before: last.id })}">older runs</a></p>` : ''}
      </div>`;
  },
});
