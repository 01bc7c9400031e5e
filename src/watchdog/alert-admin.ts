import type { Database } from '../db/database.js';
import type { AlertRow } from '../db/watchdog.js';
import { AlertNotFoundError, AlertResolvedError, OptionsInvalidError, type Issue } from '../errors.js';
import type { EventBus } from '../telemetry/events.js';

/** An alert, as listed. */
export interface AlertRecord {
  id: string;
  check: string;
  /** `''` for the check as a whole. */
  subject: string;
  level: 'warning' | 'critical';
  state: 'open' | 'acknowledged' | 'resolved';
  /** The newest bad result's message and details. */
  message: string;
  details: Record<string, unknown> | null;
  openedAt: Date;
  levelChangedAt: Date;
  resolvedAt: Date | null;
  /** How long it was open (until now while open), by the database clock. */
  durationMs: number;
  /** Notifications sent so far (the sequence number of the newest). */
  notifications: number;
  lastNotifiedAt: Date | null;
  acknowledgedAt: Date | null;
  acknowledgedBy: string | null;
  ackReason: string | null;
}

/** Options of `listAlerts`. */
export interface ListAlertsOptions {
  /** Only open alerts (acknowledged ones included). Default false. */
  open?: boolean;
  /** Only this check's. */
  check?: string;
  /** At most this many, 1 to 1000. Default 100. */
  limit?: number;
  /** Only alerts with a smaller id (the cursor of the previous page). */
  beforeId?: string;
}

/** Who acknowledges and why (required): written to the audit log. */
export interface AckOptions {
  reason: string;
  /** Default: the client's actor. */
  actor?: string;
}

/** An alert row as a record. */
export function toAlertRecord(r: AlertRow): AlertRecord {
  return {
    id: r.id,
    check: r.check_name,
    subject: r.subject,
    level: r.level,
    state: r.resolved_at ? 'resolved' : r.acked_at ? 'acknowledged' : 'open',
    message: r.message,
    details: r.details,
    openedAt: r.opened_at,
    levelChangedAt: r.level_changed_at,
    resolvedAt: r.resolved_at,
    durationMs: Math.round(r.open_ms),
    notifications: r.notifications,
    lastNotifiedAt: r.last_notified_at,
    acknowledgedAt: r.acked_at,
    acknowledgedBy: r.acked_by,
    ackReason: r.ack_reason,
  };
}

const ID = /^[1-9]\d{0,18}$/;

function idProblem(id: unknown, issues: Issue[], path = 'id'): string {
  if (typeof id !== 'string' || !ID.test(id) || BigInt(id) > 9_223_372_036_854_775_807n) issues.push({ path, message: `must be an alert id (a positive integer), got ${JSON.stringify(id)}` });
  return String(id);
}

/** The operator's view of alerts: list, show, acknowledge. */
export class AlertAdmin {
  constructor(
    private readonly database: Database,
    private readonly events: EventBus,
    private readonly actor: string,
  ) {}

  /** Alerts, newest first. */
  async list(options: ListAlertsOptions = {}): Promise<AlertRecord[]> {
    const issues: Issue[] = [];
    const limit = options.limit ?? 100;
    if (!Number.isInteger(limit) || limit < 1 || limit > 1_000) issues.push({ path: 'limit', message: 'must be an integer from 1 to 1000' });
    if (options.check !== undefined && typeof options.check !== 'string') issues.push({ path: 'check', message: 'must be a check name' });
    if (options.beforeId !== undefined) idProblem(options.beforeId, issues, 'beforeId');
    if (issues.length) throw new OptionsInvalidError('listAlerts', issues);
    const rows = await this.database.watchdog.alertList({ open: options.open === true, check: options.check ?? null, beforeId: options.beforeId ?? null, limit });
    return rows.map(toAlertRecord);
  }

  /** One alert, or NS_ALERT_NOT_FOUND. */
  async get(id: string): Promise<AlertRecord> {
    const issues: Issue[] = [];
    idProblem(id, issues);
    if (issues.length) throw new OptionsInvalidError('getAlert', issues);
    const row = await this.database.watchdog.alertGet({ id });
    if (!row) throw new AlertNotFoundError(id);
    return toAlertRecord(row);
  }

  /**
   * Acknowledges an open alert (audited as `alert-ack` on `alert:<id>`): it gets no more
   * reminders; level changes and the resolve are still notified. Acknowledging it again changes
   * nothing (`changed: false`); a resolved alert is NS_ALERT_RESOLVED.
   */
  async ack(id: string, options: AckOptions): Promise<{ alert: AlertRecord; changed: boolean }> {
    const issues: Issue[] = [];
    idProblem(id, issues);
    const reason = options?.reason;
    if (typeof reason !== 'string' || reason.trim() === '') issues.push({ path: 'reason', message: 'say why (kept in the audit log), e.g. "known: PSP maintenance until 02:00"' });
    else if (reason.length > 1_000) issues.push({ path: 'reason', message: 'must be at most 1000 characters' });
    const actor = options?.actor ?? this.actor;
    if (typeof actor !== 'string' || actor.trim() === '' || actor.length > 200) issues.push({ path: 'actor', message: 'must be 1 to 200 characters' });
    if (issues.length) throw new OptionsInvalidError('ackAlert', issues);
    const row = await this.database.watchdog.alertAck({ id, actor, reason: reason!.trim() });
    if (row) {
      this.events.emit({ type: 'alert.acknowledged', alertId: row.id, check: row.check_name, subject: row.subject, actor });
      return { alert: toAlertRecord(row), changed: true };
    }
    const current = await this.get(id);
    if (current.resolvedAt) throw new AlertResolvedError(id, current.resolvedAt);
    return { alert: current, changed: false };
  }
}
