// Seed 002's PspWorker: the PSP state machine NEW → QUERY_PENDING → QUERIED → CONFIRM_PENDING →
// INQUIRING → CONFIRMED | FAILED | MANUAL_REVIEW, one job per pm_psp_tx_map row. Claims use SKIP
// LOCKED (multi-instance, as in the seed). The seed's lease TTLs stay: an attempt's calls are
// bounded by PSP_LEASE_SEC (10 s) the first time and PSP_RETRY_LEASE_SEC (30 s) on every retry,
// and the row records who holds it until when (leased_by = host.pid, for audit). Every state change
// is a transaction fenced by the job's lease, so a pod that lost the row cannot write it.
//
// The orphan rqUID: a row found in CONFIRM_PENDING at the start of an attempt means an earlier
// attempt sent (or may have sent) a confirm whose rqUID it never wrote. Confirming again could pay
// twice and there is nothing to inquire with, so the row goes to MANUAL_REVIEW and its job is
// held; an operator resolves it (`nightshift jobs resolve <id> --as completed|failed`), which
// moves the row to CONFIRMED or FAILED and enqueues the outbox event in the same transaction.
import { randomUUID } from 'node:crypto';
import { hostname } from 'node:os';
import { z } from 'zod';
import { defineJob, hold, retryAfter, type Executor, type JobContext } from '../../src/index.js';
import type { OutboxAction } from './outbox.js';
import { pspDriver } from './providers.js';
import type { PmSettings } from './settings.js';
import type { PmStore, PspRow } from './store.js';
import { intentTrace } from './trace.js';

/** The psp-process kind. `enqueueOutbox` adds the outbox event inside the caller's transaction. */
export function pspJob(s: PmSettings, store: PmStore, enqueueOutbox: (tx: Executor, intentId: string, action: OutboxAction) => Promise<void>) {
  /** CONFIRMED or FAILED, with the outbox event, in one transaction. */
  const decide = async (tx: Executor, row: PspRow, from: PspRow['state'], to: 'CONFIRMED' | 'FAILED') => {
    if (!(await store.movePspRow(tx, row.id, from, to))) throw new Error(`PSP row ${row.id} left ${from} under this attempt`);
    await enqueueOutbox(tx, row.intent_id, to === 'CONFIRMED' ? 'post_pending' : 'void_pending');
  };

  return defineJob({
    kind: 'psp-process',
    queue: 'psp',
    payload: z.object({ rowId: z.string() }),
    maxAttempts: 20,
    backoff: { initialMs: 500, factor: 2, maxMs: 30_000, jitter: 0.25 },
    run: async ({ rowId }, ctx: JobContext) => {
      const leaseSec = ctx.attempt === 1 ? s.pspLeaseSec : s.pspRetryLeaseSec;
      const signal = AbortSignal.any([ctx.signal, AbortSignal.timeout(leaseSec * 1_000)]);
      await store.leasePspRow(ctx.db, rowId, ctx.attempt, leaseSec, `${hostname()}.${process.pid}`);
      let row = await store.pspRow(ctx.db, rowId);
      if (!row) throw new Error(`PSP row ${rowId} does not exist`);
      const intent = await store.intent(ctx.db, row.intent_id);
      const driver = pspDriver(s.pspUrl(row.psp), row.psp);
      const move = (from: PspRow['state'], to: PspRow['state'], set?: Parameters<PmStore['movePspRow']>[4]) =>
        ctx.transaction(async (tx) => {
          if (!(await store.movePspRow(tx, rowId, from, to, set))) throw new Error(`PSP row ${rowId} left ${from} under this attempt`);
        });
      let confirmingNow = false;
      for (;;) {
        switch (row.state) {
          case 'NEW':
            await move('NEW', 'QUERY_PENDING', { queryRqUid: randomUUID() });
            break;
          case 'QUERY_PENDING': {
            // A query is safe to repeat with its stored rqUID.
            const r = await driver.query({ rqUID: row.query_rq_uid!, intentId: row.intent_id, amountSatang: Number(intent?.amount_satang ?? 0) }, signal);
            if (r.status === 'declined') {
              const from = row;
              await ctx.transaction((tx) => decide(tx, from, 'QUERY_PENDING', 'FAILED'));
            } else await move('QUERY_PENDING', 'QUERIED');
            break;
          }
          case 'QUERIED':
            await move('QUERIED', 'CONFIRM_PENDING');
            confirmingNow = true;
            break;
          case 'CONFIRM_PENDING': {
            if (!confirmingNow) {
              const reason = `orphan rqUID: PSP row ${rowId} (intent ${row.intent_id}) was left in CONFIRM_PENDING without its confirm rqUID; check the ${row.psp} statement, then resolve: nightshift jobs resolve ${ctx.jobId} --as completed (paid) or --as failed`;
              await move('CONFIRM_PENDING', 'MANUAL_REVIEW', { reviewReason: reason });
              return hold(reason);
            }
            const rqUID = randomUUID();
            await driver.confirm({ rqUID, intentId: row.intent_id }, signal);
            await move('CONFIRM_PENDING', 'INQUIRING', { confirmRqUid: rqUID });
            break;
          }
          case 'INQUIRING': {
            const r = await driver.inquire({ rqUID: row.confirm_rq_uid! }, signal);
            if (r.status === 'PENDING') return retryAfter(s.pspPollIntervalMs, `${row.psp} answered PENDING`);
            const from = row;
            await ctx.transaction((tx) => decide(tx, from, 'INQUIRING', r.status === 'SUCCESS' ? 'CONFIRMED' : 'FAILED'));
            break;
          }
          case 'MANUAL_REVIEW':
            return hold(`PSP row ${rowId} is in MANUAL_REVIEW`);
          case 'CONFIRMED':
          case 'FAILED':
            return; // decided (by an earlier attempt)
        }
        row = (await store.pspRow(ctx.db, rowId))!;
      }
    },
    // The operator's decision on a MANUAL_REVIEW row, in the resolve's own transaction (audited by nightshift).
    onResolve: async ({ payload, as }, tx) => {
      if (as === 'retry') throw new Error('a MANUAL_REVIEW payment is not retried (a second confirm could pay twice): resolve it --as completed (paid) or --as failed');
      const row = await store.pspRow(tx, payload.rowId);
      if (row?.state !== 'MANUAL_REVIEW') throw new Error(`PSP row ${payload.rowId} is ${row?.state ?? 'missing'}, not MANUAL_REVIEW`);
      await decide(tx, row, 'MANUAL_REVIEW', as === 'completed' ? 'CONFIRMED' : 'FAILED');
    },
  });
}

/** The outbox event from SQL, for transactions that have no client at hand (a resolve's). */
export function sqlOutboxEnqueuer(schema: string) {
  return async (tx: Executor, intentId: string, action: OutboxAction): Promise<void> => {
    await tx.query({
      text: `SELECT "${schema}".enqueue('outbox-event', jsonb_build_object('intentId', $1::text, 'action', $2::text), trace_context => $3::jsonb)`,
      values: [intentId, action, JSON.stringify(intentTrace(intentId))],
    });
  };
}
