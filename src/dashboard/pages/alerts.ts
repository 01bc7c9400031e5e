import { html } from '../html.js';
import { definePage } from '../page.js';
import { here, ms, table, when } from './format.js';

/** The watchdog's alerts: open ones first, then the history; acknowledge with a reason. */
export const alertsPage = definePage({
  id: 'alerts',
  title: 'Alerts',
  path: '/alerts',
  async load({ api }) {
    const [open, history] = await Promise.all([api.listAlerts({ open: true, limit: 100 }), api.listAlerts({ limit: 100 })]);
    return { open, history: history.filter((a) => a.state === 'resolved') };
  },
  render({ open, history }, view) {
    const now = Date.now();
    const back = here(view, '/alerts');
    return html`<h1>Alerts</h1>
      <div data-live="alerts">
        <h2>Open</h2>
        ${table(
          ['check', 'subject', 'level', 'state', 'message', 'opened', 'for', ''],
          open.map(
            (a) =>
              html`<tr data-alert="${a.id}">
                <td>${a.check}</td>
                <td>${a.subject || '–'}</td>
                <td class="${a.level === 'critical' ? 'bad' : 'warn'}">${a.level}</td>
                <td>${a.state}${a.acknowledgedBy ? html` <span class="muted">by ${a.acknowledgedBy}: ${a.ackReason ?? ''}</span>` : ''}</td>
                <td>${a.message}</td>
                <td>${when(a.openedAt, now)}</td>
                <td>${ms(a.durationMs)}</td>
                <td>
                  ${
                    a.state === 'open' && view.can('act')
                      ? html`<form class="inline" method="post" action="${view.href('/actions/alerts/ack')}">
                          ${view.csrf}<input type="hidden" name="back" value="${back}" /><input type="hidden" name="id" value="${a.id}" />
                          <input name="reason" placeholder="reason" required maxlength="500" aria-label="reason for acknowledging" /><button type="submit" id="ack-${a.id}">ack</button>
                        </form>`
                      : ''
                  }
                </td>
              </tr>`,
          ),
          'No open alert.',
        )}
        <h2>History</h2>
        ${table(
          ['check', 'subject', 'level', 'message', 'opened', 'resolved', 'lasted'],
          history.map(
            (a) =>
              html`<tr>
                <td>${a.check}</td>
                <td>${a.subject || '–'}</td>
                <td>${a.level}</td>
                <td>${a.message}</td>
                <td>${when(a.openedAt, now)}</td>
                <td>${when(a.resolvedAt, now)}</td>
                <td>${ms(a.durationMs)}</td>
              </tr>`,
          ),
          'No resolved alert yet.',
        )}
      </div>`;
  },
  actions: {
    ack: {
      permission: 'act',
      async run({ api, user, form }) {
        const id = form.get('id') ?? '';
        const { changed } = await api.ackAlert(id, { actor: user.name, reason: form.get('reason')?.trim() || 'acknowledged in the dashboard' });
        return { flash: changed ? `acknowledged alert ${id}` : `alert ${id} was already acknowledged` };
      },
    },
  },
});
