import type { AlertLevelValue, AlertRow } from '../db/watchdog.js';

/** Why a notification is sent. */
export type AlertEvent = 'opened' | 'changed' | 'reminder' | 'resolved';

/** The alert as a notification carries it (a snapshot taken when the change committed). */
export interface AlertSnapshot {
  id: string;
  check: string;
  /** `''` for the check as a whole. */
  subject: string;
  level: AlertLevelValue;
  /** For `changed`: the level before. */
  previousLevel: AlertLevelValue | null;
  message: string;
  details: Record<string, unknown> | null;
  openedAt: string;
  resolvedAt: string | null;
  /** For `resolved`: how long the alert was open. */
  durationMs: number | null;
  acknowledged: boolean;
}

/** One notification: what a webhook receives as its JSON body, and what every notifier formats. */
export interface AlertNotification {
  /** Stable across delivery attempts: `<alert id>.<sequence>`. Dedupe on it. */
  id: string;
  event: AlertEvent;
  /** The alert's notifications so far, this one included (1 for `opened`): sort late ones by it. */
  sequence: number;
  /** When the change happened (database clock). */
  at: string;
  alert: AlertSnapshot;
}

/** The notification of an alert change, from the alert's row as the change left it. */
export function notificationOf(row: AlertRow, event: AlertEvent, previousLevel: AlertLevelValue | null): AlertNotification {
  const at = (row.last_notified_at ?? row.opened_at).toISOString();
  return {
    id: `${row.id}.${row.notifications}`,
    event,
    sequence: row.notifications,
    at,
    alert: {
      id: row.id,
      check: row.check_name,
      subject: row.subject,
      level: row.level,
      previousLevel,
      message: row.message,
      details: row.details,
      openedAt: row.opened_at.toISOString(),
      resolvedAt: row.resolved_at ? row.resolved_at.toISOString() : null,
      durationMs: row.resolved_at ? Math.round(row.open_ms) : null,
      acknowledged: row.acked_at !== null,
    },
  };
}

/** How long, in words (`3 min`, `2 h 5 min`). */
export function durationText(ms: number): string {
  if (ms < 1_000) return `${Math.max(0, Math.round(ms))} ms`;
  const s = Math.round(ms / 1000);
  if (s < 120) return `${s} s`;
  const m = Math.round(s / 60);
  if (m < 120) return `${m} min`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h} h ${m % 60} min`;
  return `${Math.round(h / 24)} d`;
}

/** One line saying what happened: `[CRITICAL] stuck-buy-intents: opened`. */
export function notificationTitle(n: AlertNotification): string {
  const a = n.alert;
  const what = `${a.check}${a.subject ? ` (${a.subject})` : ''}`;
  switch (n.event) {
    case 'opened':
      return `[${a.level.toUpperCase()}] ${what}: opened`;
    case 'changed':
      return `[${a.level.toUpperCase()}] ${what}: ${a.previousLevel ?? '?'} → ${a.level}`;
    case 'reminder':
      return `[${a.level.toUpperCase()}] ${what}: still open since ${a.openedAt}`;
    case 'resolved':
      return `[RESOLVED] ${what}: resolved after ${durationText(a.durationMs ?? 0)}`;
  }
}

/** The plain-text body every text notifier sends: title, message, and the ids to quote. */
export function notificationText(n: AlertNotification, maxLength = 4_000): string {
  const footer = `alert ${n.alert.id} · notification ${n.id}${n.alert.acknowledged ? ' · acknowledged' : ''}`;
  const title = notificationTitle(n);
  const room = Math.max(0, maxLength - title.length - footer.length - 4);
  const message = n.alert.message.length > room ? `${n.alert.message.slice(0, Math.max(0, room - 1))}…` : n.alert.message;
  return `${title}\n${message}\n${footer}`;
}
