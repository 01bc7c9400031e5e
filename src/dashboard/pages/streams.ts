import { html } from '../html.js';
import { definePage } from '../page.js';
import { ms, table } from './format.js';

/** Streams: length, groups, consumers, pending, lag, dead letters, and each group's status in the words of seed 004's symptoms. */
export const streamsPage = definePage({
  id: 'streams',
  title: 'Streams',
  path: '/streams',
  async load({ api }) {
    if (!api.options.redisUrl) return { diagnosis: null, why: 'no Redis is configured (redisUrl / REDIS_URL)' };
    return { diagnosis: await api.diagnoseStreams(), why: null };
  },
  render({ diagnosis, why }) {
    if (!diagnosis)
      return html`<h1>Streams</h1>
        <p class="muted">${why}</p>`;
    return html`<h1>Streams</h1>
      <div data-live="streams">
        ${diagnosis.streams.length === 0 ? html`<p class="muted">No stream is defined.</p>` : ''}
        ${diagnosis.streams.map(
          (s) =>
            html`<h2>${s.stream} <span class="muted">length ${s.length}${s.deadLetterCount ? html`, <span class="bad">${s.deadLetterCount} dead letters</span>` : ''}</span></h2>
              ${table(
                ['group', 'status', 'consumers', 'pending', 'abandoned', 'oldest pending', 'lag', 'oldest unread'],
                s.groups.map(
                  (g) =>
                    html`<tr data-group="${g.group}">
                      <td>${g.group}</td>
                      <td class="${g.status === 'ok' ? 'ok' : 'bad'}" data-statuses="${g.statuses.join(' ')}">${g.statusText}</td>
                      <td>${g.consumers.map((c) => html`${c.name} (${c.pending} pending, idle ${ms(c.idleMs)}) `)}</td>
                      <td>${g.pending}</td>
                      <td class="${g.abandoned ? 'bad' : ''}">${g.delivery === 'at-most-once' ? g.abandoned : ''}</td>
                      <td>${ms(g.oldestPendingAgeMs)}</td>
                      <td>${g.lag ?? '?'}</td>
                      <td>${ms(g.oldestUnreadAgeMs)}</td>
                    </tr>`,
                ),
                'No consumer group.',
              )}`,
        )}
      </div>`;
  },
});
