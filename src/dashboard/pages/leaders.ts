import { html } from '../html.js';
import { definePage } from '../page.js';
import { table, when } from './format.js';

/** Daemons and leaders: each lease's holder, fencing token (its term), since when, and its audit of failovers. */
export const leadersPage = definePage({
  id: 'leaders',
  title: 'Daemons & leaders',
  path: '/leaders',
  async load({ api }) {
    return { leases: await api.listLeases() };
  },
  render({ leases }) {
    const now = Date.now();
    return html`<h1>Daemons & leaders</h1>
      <p class="muted">The fencing token grows with every new term: a jump means a failover.</p>
      <div data-live="leaders">
        ${table(
          ['lease', 'holder', 'token (term)', 'term since', 'renewed', 'expires', 'state'],
          leases.map(
            (l) =>
              html`<tr>
                <td>${l.name}</td>
                <td>${l.holder}</td>
                <td>${l.token}</td>
                <td>${when(l.acquiredAt, now)}</td>
                <td>${when(l.renewedAt, now)}</td>
                <td>${when(l.expiresAt, now)}</td>
                <td>${l.expired ? html`<span class="bad">no leader</span>` : html`<span class="ok">held</span>`}</td>
              </tr>`,
          ),
          'No lease yet: no daemon, singleton or maintenance leader has run.',
        )}
      </div>`;
  },
});
