import type { JobLimitState, JobRecord, LimitRecord } from '../../index.js';
import { html, type Html } from '../html.js';
import { definePage, type ViewContext } from '../page.js';
import { table, when } from './format.js';

/** A limit's bound in words: `4 running` or `60 per 60 s`, per key when it has keys. */
export function bound(l: Pick<LimitRecord, 'type' | 'max' | 'perMs'> & { keyed?: boolean }): string {
  const per = l.perMs === null ? '' : l.perMs % 1_000 === 0 ? `${l.perMs / 1_000} s` : `${l.perMs} ms`;
  const b = l.type === 'rate' ? `${l.max} starts per ${per}` : `${l.max} running`;
  return l.keyed ? `${b} per key` : b;
}

/** A limit's state in the words an operator asks in: is anything held back by it? */
function status(l: LimitRecord): Html {
  if (l.waiting > 0 && (l.fullKeys > 0 || (!l.keyed && l.inUse >= l.max))) {
    return html`<span class="warn">full — ${l.waiting.toLocaleString('en')} ${l.waiting === 1 ? 'due job waits' : 'due jobs wait'} for it (limited, not stuck)</span>`;
  }
  if (l.fullKeys > 0 || (!l.keyed && l.inUse >= l.max)) return html`<span class="warn">full, nothing waiting</span>`;
  if (l.waiting > 0) return html`<span class="muted">${l.waiting} due ${l.waiting === 1 ? 'job carries' : 'jobs carry'} it; it has room</span>`;
  return html`<span class="ok">room</span>`;
}

/** Fleet-wide concurrency and rate limits (`ns.listLimits()`): use now, keys at their limit, due jobs waiting, the busiest keys. */
export const limitsPage = definePage({
  id: 'limits',
  title: 'Limits',
  path: '/limits',
  async load({ api }) {
    return { limits: await api.listLimits() };
  },
  render({ limits }) {
    const now = Date.now();
    return html`<h1>Limits</h1>
      <p class="muted">A due job that waits for a full limit is <b>limited</b>, not stuck: it starts when a slot frees or the window opens. See docs/flow-control.md.</p>
      <div data-live="limits">
        ${table(
          ['limit', 'bound', 'in use', 'keys at their limit', 'due jobs waiting', 'status', 'busiest keys', 'declared'],
          limits.map(
            (l) =>
              html`<tr data-limit="${l.name}">
                <td><b>${l.name}</b></td>
                <td>${bound(l)}</td>
                <td class="limit-in-use">${l.inUse}${l.keyed ? '' : html` <span class="muted">of ${l.max}</span>`}</td>
                <td>${l.keyed ? l.fullKeys : '–'}</td>
                <td class="limit-waiting">${l.waiting >= 10_000 ? 'more than 10,000' : l.waiting.toLocaleString('en')}</td>
                <td class="limit-status">${status(l)}</td>
                <td>${l.top.slice(0, 5).map((t) => html`<code>${t.key || '(all)'}</code>=${t.inUse}${t.inUse >= l.max ? html` <span class="warn">full</span>` : ''} `)}</td>
                <td>${when(l.updatedAt, now)}</td>
              </tr>`,
          ),
          'No limits: none is declared by a worker that ran on this schema.',
        )}
      </div>
      <p class="muted">Due jobs waiting are counted up to 10,000. A job's page says which limit it waits for.</p>`;
  },
});

/**
 * The limits section of a job's page: each limit it holds or waits for with its key's use, and in
 * one sentence whether a due job is waiting for a full limit (limited) or for nothing (look at the
 * workers: it may be stuck).
 */
export function jobLimitsSection(j: JobRecord, limits: readonly JobLimitState[], view: ViewContext): Html {
  const due = j.state === 'available' && j.runAt.getTime() <= Date.now();
  const full = limits.filter((l) => l.full);
  const name = (l: JobLimitState) => `${l.limit}${l.key ? ` (key ${l.key})` : ''}`;
  let verdict: Html = html``;
  if (due && full.length) {
    verdict = html`<p class="warn" id="limit-verdict" data-limited="true">Waiting for limit ${full.map(name).join(', ')} (full): limited, not stuck. It starts when a slot frees.</p>`;
  } else if (due) {
    verdict = html`<p class="muted" id="limit-verdict" data-limited="false">
      Due and not waiting for a limit${limits.length ? ' (all its limits have room)' : ''}. If it does not start, look at the
      <a href="${view.href('/processes')}">processes</a> (is anyone claiming queue ${j.queue}?) and the <a href="${view.href('/queues')}">queue</a> (paused?).
    </p>`;
  }
  if (!limits.length && !due) return html``;
  return html`<h2>Limits</h2>
    ${verdict}
    ${table(
      ['limit', 'key', 'in use', 'bound', ''],
      limits.map(
        (l) =>
          html`<tr data-job-limit="${l.limit}">
            <td><a href="${view.href('/limits')}">${l.limit}</a></td>
            <td>${l.key || html`<span class="muted">–</span>`}</td>
            <td>${l.inUse}/${l.max}</td>
            <td>${bound(l)}</td>
            <td>${l.full ? html`<span class="warn">full</span>` : html`<span class="ok">room</span>`}</td>
          </tr>`,
      ),
      'This job carries no limit.',
    )}`;
}
