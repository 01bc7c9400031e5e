import { html } from '../html.js';
import { definePage } from '../page.js';

/** The connection budget: what a process of this shape and the fleet need against max_connections. */
export const budgetPage = definePage({
  id: 'budget',
  title: 'Budget',
  path: '/budget',
  async load({ api, query }) {
    const replicas = Math.min(10_000, Math.max(1, Number(query.get('replicas')) || 1));
    return { report: await api.connectionBudget({ replicas }), replicas };
  },
  render({ report: r, replicas }, view) {
    return html`<h1>Connection budget</h1>
      <form class="filters" method="get" action="${view.href('/budget')}">
        <label>replicas <input name="replicas" type="number" min="1" value="${replicas}" /></label><button type="submit">compute</button>
      </form>
      <div data-live="budget">
        <table>
          <tbody>
            <tr>
              <th>per process</th>
              <td>${r.perProcess.pool} pool + ${r.perProcess.listener} listener = ${r.perProcess.total}</td>
            </tr>
            <tr>
              <th>fleet (${r.replicas} replicas)</th>
              <td>${r.fleet}</td>
            </tr>
            <tr>
              <th>server</th>
              <td>max_connections ${r.server.maxConnections}, reserved ${r.server.reserved}, in use ${r.server.inUse} (PostgreSQL ${r.server.version})</td>
            </tr>
            <tr>
              <th>headroom</th>
              <td class="${r.ok ? 'ok' : 'bad'}">${r.headroom} ${r.ok ? '' : '— over budget'}</td>
            </tr>
          </tbody>
        </table>
      </div>`;
  },
});
