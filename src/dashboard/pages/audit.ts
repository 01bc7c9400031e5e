import { html } from '../html.js';
import { definePage } from '../page.js';
import { table, when } from './format.js';

/** The audit log: who did what to which target, why and when; by target, paged. */
export const auditPage = definePage({
  id: 'audit',
  title: 'Audit log',
  path: '/audit',
  async load({ api, query }) {
    const target = query.get('target') || undefined;
    const before = query.get('before') || undefined;
    return { entries: await api.listAudit({ limit: 100, ...(target ? { target } : {}), ...(before ? { beforeId: before } : {}) }), target };
  },
  render({ entries, target }, view) {
    const now = Date.now();
    const link = (t: string) => (t.startsWith('job:') ? html`<a href="${view.href(`/jobs/${t.slice(4)}`)}">${t}</a>` : t);
    return html`<h1>Audit log</h1>
      <form class="filters" method="get" action="${view.href('/audit')}">
        <label>target <input name="target" value="${target ?? ''}" placeholder="job:42 or queue:mail" /></label><button type="submit">filter</button>
      </form>
      <div data-live="audit">
        ${table(
          ['when', 'who', 'action', 'target', 'reason', 'details'],
          entries.map(
            (a) =>
              html`<tr class="audit-entry">
                <td>${when(a.at, now)}</td>
                <td>${a.actor}</td>
                <td>${a.action}</td>
                <td>${link(a.target)}</td>
                <td>${a.reason ?? ''}</td>
                <td class="muted">${a.details ? JSON.stringify(a.details) : ''}</td>
              </tr>`,
          ),
          'Nothing audited yet.',
        )}
      </div>
      ${entries.length === 100 ? html`<p><a href="${view.href('/audit', { target, before: entries.at(-1)!.id })}">older →</a></p>` : ''}`;
  },
});
