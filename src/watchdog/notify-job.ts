import { z } from 'zod';
import { NotifierError } from '../errors.js';
import { defineJob, type JobDefinition } from '../jobs/define-job.js';
import { discard } from '../jobs/job-control.js';
import type { Backoff } from '../jobs/retry-policy.js';
import { WATCHDOG_QUEUE } from './define-check.js';
import type { AlertNotification } from './notification.js';
import type { Notifier } from './notifiers/notifier.js';

/** The kind of notification jobs. */
export const NOTIFY_KIND = 'nightshift.notify';

/** How notifications are retried. */
export interface DeliveryOptions {
  /** Attempts before a notification is discarded. Default 25. */
  maxAttempts?: number;
  /** Default: from 5 s, doubling, up to 15 minutes, 25 % jitter (25 attempts take about four and a half hours). */
  backoff?: Backoff;
}

/** The default back-off of notifications. */
export const DEFAULT_DELIVERY_BACKOFF: Backoff = Object.freeze({ initialMs: 5_000, factor: 2, maxMs: 15 * 60_000, jitter: 0.25 });
/** The default attempts of a notification. */
export const DEFAULT_DELIVERY_ATTEMPTS = 25;

const level = z.enum(['warning', 'critical']);
const notification = z.object({
  id: z.string(),
  event: z.enum(['opened', 'changed', 'reminder', 'resolved']),
  sequence: z.number().int(),
  at: z.string(),
  alert: z.object({
    id: z.string(),
    check: z.string(),
    subject: z.string(),
    level,
    previousLevel: level.nullable(),
    message: z.string(),
    details: z.record(z.string(), z.unknown()).nullable(),
    openedAt: z.string(),
    resolvedAt: z.string().nullable(),
    durationMs: z.number().nullable(),
    acknowledged: z.boolean(),
  }),
});

/** The payload of a notification job: which notifier, and the notification as the alert change left it. */
export const notifyPayload = z.object({ notifier: z.string(), notification });

/**
 * The job that delivers one notification through one notifier. The notification is a snapshot
 * taken in the alert change's transaction, so every attempt sends the same body with the same id.
 * A notifier this process does not know (renamed or removed since) discards the job, saying so.
 */
export function notifyJob(notifiers: ReadonlyMap<string, Notifier>, delivery: { maxAttempts: number; backoff: Backoff }): JobDefinition<typeof notifyPayload> {
  return defineJob({
    kind: NOTIFY_KIND,
    queue: WATCHDOG_QUEUE,
    payload: notifyPayload,
    maxAttempts: delivery.maxAttempts,
    backoff: delivery.backoff,
    // Each notifier bounds its own request; this only catches one that hangs regardless.
    timeoutMs: 5 * 60_000,
    run: async ({ notifier, notification: n }, ctx) => {
      const target = notifiers.get(notifier);
      if (!target) {
        return discard(`no notifier named "${notifier}" in this process's config${notifiers.size ? ` (it has ${[...notifiers.keys()].join(', ')})` : ''}: it was renamed or removed`);
      }
      if (target.missing.length) throw new NotifierError(notifier, `${target.type} "${notifier}" is incomplete: ${target.missing.join(', ')} not set`);
      return target.send(n as AlertNotification, ctx.signal);
    },
  });
}
