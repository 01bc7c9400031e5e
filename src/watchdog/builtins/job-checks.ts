import type { CheckResult } from '../define-check.js';
import { durationText } from '../notification.js';
import type { BuiltinSpec, WatchdogEnv } from './builtin.js';

const MINUTE = 60_000;
const q = (env: WatchdogEnv) => env.database.watchdogBuiltins;
const plural = (n: number, one: string, many = `${one}s`) => `${n} ${n === 1 ? one : many}`;

/** Queue lag: the age of the oldest due job per queue. */
export const queueLag: BuiltinSpec = {
  key: 'queueLag',
  name: 'nightshift.queue-lag',
  description: 'the oldest due job of each queue has not waited too long',
  thresholds: { warningMs: { default: 2 * MINUTE, duration: true, min: 1_000 }, criticalMs: { default: 10 * MINUTE, duration: true, min: 1_000 } },
  async run(env, t) {
    const rows = await q(env).queueLag({ olderThanMs: Math.min(t.warningMs!, t.criticalMs!) });
    return rows.map((r): CheckResult => ({
      subject: r.queue,
      status: r.oldest_ms >= t.criticalMs! ? 'critical' : 'warning',
      message:
        `queue "${r.queue}": the oldest due job has waited ${durationText(r.oldest_ms)} (${plural(r.waiting, 'job')} over ${durationText(Math.min(t.warningMs!, t.criticalMs!))}). ` +
        "Workers are missing, too few or stuck: see `nightshift workers` (is any process claiming this queue?), then add replicas or raise the queue's concurrency",
      details: { queue: r.queue, waiting: r.waiting, oldestMs: Math.round(r.oldest_ms) },
    }));
  },
};

/** Jobs of a kind no live process runs on their queue. */
export const unrunnableKinds: BuiltinSpec = {
  key: 'unrunnableKinds',
  name: 'nightshift.unrunnable-kinds',
  description: 'every due job has a live process that runs its kind on its queue',
  thresholds: { graceMs: { default: MINUTE, duration: true }, liveWithinMs: { default: MINUTE, duration: true, min: 1_000 } },
  async run(env, t) {
    const rows = await q(env).unrunnable({ graceMs: t.graceMs!, liveWithinMs: t.liveWithinMs! });
    return rows.map((r): CheckResult => ({
      subject: `${r.kind}@${r.queue}`,
      status: 'critical',
      message:
        `${plural(r.count, 'job')} of kind "${r.kind}" wait on queue "${r.queue}" (the oldest for ${durationText(r.oldest_ms)}) and no live process runs that kind on that queue. ` +
        `Start a process whose role hosts it (roles.<role>.jobs or .queues; \`nightshift workers\` shows what each runs), or cancel them: nightshift jobs cancel --kind ${r.kind} --yes`,
      details: { kind: r.kind, queue: r.queue, count: r.count, oldestMs: Math.round(r.oldest_ms) },
    }));
  },
};

/** Leases past their expiry that nobody rescued. */
export const expiredLeases: BuiltinSpec = {
  key: 'expiredLeases',
  name: 'nightshift.expired-leases',
  description: 'running jobs whose worker died are rescued',
  thresholds: { graceMs: { default: MINUTE, duration: true } },
  async run(env, t) {
    const r = await q(env).expiredLeases({ graceMs: t.graceMs! });
    if (r.count === 0) return { status: 'ok', message: 'no running job holds an expired lease' };
    return {
      status: 'critical',
      message:
        `${plural(r.count, 'running job')} (${(r.ids ?? []).join(', ')}${r.count > 5 ? ', …' : ''}) hold a lease that expired ${durationText(r.oldest_ms ?? 0)} ago and nobody rescued them. ` +
        'Rescue runs on the maintenance leader: is any process running maintenance (worker.maintenance, on by default)? `nightshift daemons` shows nightshift:maintenance; its logs say why it fails',
      details: { count: r.count, oldestMs: Math.round(r.oldest_ms ?? 0), ids: r.ids ?? [] },
    };
  },
};

/** Discarded jobs per kind over a window. */
export const discardedJobs: BuiltinSpec = {
  key: 'discardedJobs',
  name: 'nightshift.discarded-jobs',
  description: 'no job failed for good within the window',
  thresholds: {
    windowMs: { default: 60 * MINUTE, duration: true, min: 1_000 },
    warningCount: { default: 1, min: 1 },
    criticalCount: { default: 100, min: 1 },
  },
  async run(env, t) {
    const rows = await q(env).discarded({ windowMs: t.windowMs! });
    return rows
      .filter((r) => r.count >= Math.min(t.warningCount!, t.criticalCount!))
      .map((r): CheckResult => ({
        subject: r.kind,
        status: r.count >= t.criticalCount! ? 'critical' : 'warning',
        message:
          `${plural(r.count, 'job')} of kind "${r.kind}" discarded (failed for good) in the last ${durationText(t.windowMs!)}, the newest #${r.newest_id}. ` +
          `Read the errors (nightshift jobs show ${r.newest_id}), fix the cause, then retry: nightshift jobs retry --kind ${r.kind} --state discarded --yes`,
        details: { kind: r.kind, count: r.count, newestId: r.newest_id },
      }));
  },
};

/** Held and abandoned jobs waiting for an operator. */
export const waitingForOperator: BuiltinSpec = {
  key: 'waitingForOperator',
  name: 'nightshift.waiting-for-operator',
  description: 'no held or abandoned job waits for an operator',
  thresholds: { warningCount: { default: 1, min: 1 }, criticalAfterMs: { default: 24 * 60 * MINUTE, duration: true, min: 1_000 } },
  async run(env, t) {
    const rows = await q(env).waiting();
    return rows
      .filter((r) => r.held + r.abandoned >= t.warningCount!)
      .map((r): CheckResult => {
        const what = [r.held ? `${r.held} held for review` : '', r.abandoned ? `${r.abandoned} abandoned (an at-most-once run was interrupted)` : ''].filter(Boolean).join(' and ');
        return {
          subject: r.kind,
          status: r.oldest_ms >= t.criticalAfterMs! ? 'critical' : 'warning',
          message:
            `jobs of kind "${r.kind}" wait for an operator: ${what}; the oldest (#${r.oldest_id}) for ${durationText(r.oldest_ms)}. ` +
            `Decide each: nightshift jobs resolve <id> --as completed|failed|retry --reason … (list them: nightshift jobs list --kind ${r.kind} --state held,abandoned)`,
          details: { kind: r.kind, held: r.held, abandoned: r.abandoned, oldestMs: Math.round(r.oldest_ms), oldestId: r.oldest_id },
        };
      });
  },
};
