import { html, type Html } from '../html.js';
import type { ViewContext } from '../page.js';

/** A time as people read it: how long ago (or until), with the exact UTC instant on hover. */
export function when(d: Date | string | null | undefined, now = Date.now()): Html {
  if (!d) return html`<span class="muted">–</span>`;
  const t = new Date(d);
  const s = Math.round((t.getTime() - now) / 1000);
  const a = Math.abs(s);
  const span = a < 60 ? `${a}s` : a < 3_600 ? `${Math.round(a / 60)}m` : a < 86_400 ? `${Math.round(a / 3_600)}h` : `${Math.round(a / 86_400)}d`;
  return html`<time datetime="${t.toISOString()}" title="${t.toISOString()}">${s <= 0 ? `${span} ago` : `in ${span}`}</time>`;
}

/** A duration in ms, short. */
export function ms(v: number | null | undefined): string {
  if (v === null || v === undefined) return '–';
  if (v < 1_000) return `${Math.round(v)} ms`;
  if (v < 60_000) return `${(v / 1_000).toFixed(1)} s`;
  return `${(v / 60_000).toFixed(1)} min`;
}

const STATE_CLASS: Record<string, string> = { completed: 'ok', discarded: 'bad', held: 'warn', abandoned: 'warn', expired: 'bad', cancelled: 'muted', running: '', available: '' };

/** A job state as a badge. */
export function state(s: string): Html {
  return html`<span class="state ${STATE_CLASS[s] ?? ''}" data-state="${s}">${s}</span>`;
}

/** A count that may have been capped. */
export function count(n: number, cap: number): string {
  return n > cap ? `more than ${cap.toLocaleString('en')}` : n.toLocaleString('en');
}

/** A table with a header, or a line saying there is nothing. */
export function table(headers: string[], rows: Html[], empty: string): Html {
  if (rows.length === 0) return html`<p class="muted">${empty}</p>`;
  return html`<table>
    <thead>
      <tr>
        ${headers.map((h) => html`<th>${h}</th>`)}
      </tr>
    </thead>
    <tbody>
      ${rows}
    </tbody>
  </table>`;
}

/** A POST form with one button (hidden fields, optionally a choice and a reason): every state change of the dashboard goes through one. */
export function actionForm(view: ViewContext, p: ActionFormSpec): Html {
  const reasonLabel = p.reasonLabel ?? `reason for ${p.label}`;
  return html`<form class="inline" method="post" action="${view.href(`/actions/${p.page}/${p.action}`)}" ${p.formId ? html`id="${p.formId}"` : ''} ${p.confirm ? html`data-confirm="${p.confirm}"` : ''}>
    ${view.csrf}<input type="hidden" name="back" value="${p.back}" />
    ${Object.entries(p.fields ?? {}).map(([k, v]) => html`<input type="hidden" name="${k}" value="${v}" />`)}
    ${
      p.select
        ? html`<select name="${p.select.name}" aria-label="${p.select.label}">
            ${p.select.options.map((o) => html`<option value="${o}">${o}</option>`)}
          </select>`
        : ''
    }
    ${p.reason ? html`<input name="reason" placeholder="reason" aria-label="${reasonLabel}" maxlength="500" ${p.reason === 'required' ? html`required` : ''} />` : ''}
    <button type="submit" ${p.id ? html`id="${p.id}"` : ''}>${p.label}</button>
  </form>`;
}

/** What {@link actionForm} renders: a POST to `/actions/<page>/<action>` with the CSRF token and the way back. */
export interface ActionFormSpec {
  page: string;
  action: string;
  /** The button's text. */
  label: string;
  /** Hidden fields naming what the action applies to. */
  fields?: Record<string, string>;
  back: string;
  /** A question the browser asks before it posts. */
  confirm?: string;
  /** A reason field: optional (`true`) or `'required'`. */
  reason?: boolean | 'required';
  /** The reason field's accessible name (default "reason for <label>"). */
  reasonLabel?: string;
  /** One choice the action takes (a resolution, a step), shown before the reason. */
  select?: { name: string; label: string; options: readonly string[] };
  /** The button's id. */
  id?: string;
  /** The form's id. */
  formId?: string;
}

/** The current page's URL (for a form's way back). */
export function here(view: ViewContext, path: string): string {
  return view.href(path, Object.fromEntries([...view.query].filter(([k]) => k !== 'flash' && k !== 'flashError')));
}

/** JSON shown as text (escaped like everything else). */
export function json(value: unknown): Html {
  return html`<pre>${JSON.stringify(value, null, 2) ?? 'null'}</pre>`;
}
