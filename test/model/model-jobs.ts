/**
 * The job kinds of the model-based test: `model-alo` (at-least-once) and `model-amo`
 * (at-most-once), both with a timeout. The payload carries the plan — what the handler does on
 * each attempt (see Behaviour) — so the checker knows what each run was told to do.
 *
 * Each run leaves two records:
 *  - a row in the recorder's `effects` table (job, kind, attempt, process, fencing token, the
 *    behaviour in `note`, start and end on the database clock, `outcome`), written through the
 *    job's own connection pool, as the effect of a real handler would be;
 *  - two lines in the process's run log, written synchronously (so they survive a SIGKILL) before
 *    the handler's first await and when it returns: the slots a process really used, and proof that
 *    a handler was called even when its database write did not land.
 */
import { closeSync, openSync, writeSync } from 'node:fs';
import { z } from 'zod';
import { defineJob, type JobContext } from '../../src/index.js';
import { limitName, MODEL_LIMIT_KEYS, MODEL_SETTINGS, type Behaviour, type KindLimits, type ModelLimits } from './scenario.js';

export const modelPayload = z.object({
  /** The enqueue step this job came from, and its copy within the step. */
  step: z.number(),
  copy: z.number(),
  plan: z.array(z.enum(['ok', 'fail', 'hang', 'deaf'])).min(1),
  workMs: z.number(),
  /** The job's key under a per-key limit of its kind (see limitKeyOf). */
  lkey: z.string().optional(),
});
export type ModelPayload = z.infer<typeof modelPayload>;

/** The run log of one process: `s <job> <attempt> <queue> <token> <ms>` and `e <job> <attempt> <token> <ms> <outcome>`. */
export class RunLog {
  private readonly fd: number;

  constructor(path: string) {
    this.fd = openSync(path, 'a');
  }

  start(ctx: JobContext): void {
    writeSync(this.fd, `s ${ctx.jobId} ${ctx.attempt} ${ctx.queue} ${ctx.leaseToken} ${Date.now()}\n`);
  }

  end(ctx: JobContext, outcome: string): void {
    writeSync(this.fd, `e ${ctx.jobId} ${ctx.attempt} ${ctx.leaseToken} ${Date.now()} ${outcome}\n`);
  }

  close(): void {
    closeSync(this.fd);
  }
}

/** The behaviour of `attempt` (1-based): the plan's entry, the last one repeating. */
export function behaviourOf(plan: readonly Behaviour[], attempt: number): Behaviour {
  return plan[Math.min(Math.max(attempt, 1), plan.length) - 1]!;
}

/** Waits `ms`, or rejects with the signal's reason when it aborts first. */
function work(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason as Error);
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener(
      'abort',
      () => {
        clearTimeout(timer);
        reject(signal.reason as Error);
      },
      { once: true },
    );
  });
}

function handler(schema: string, log: RunLog | undefined) {
  const effects = `"${schema}".effects`;
  return async (p: ModelPayload, ctx: JobContext): Promise<void> => {
    const behaviour = behaviourOf(p.plan, ctx.attempt);
    log?.start(ctx);
    let outcome = 'ok';
    let effectId: string | undefined;
    try {
      const { rows } = await ctx.db.query({
        text: `INSERT INTO ${effects} (job_id, kind, attempt, pid, token, note) VALUES ($1, $2, $3, $4, $5, $6) RETURNING id::text`,
        values: [ctx.jobId, ctx.kind, ctx.attempt, process.pid, ctx.leaseToken, behaviour],
      });
      effectId = (rows[0] as { id: string } | undefined)?.id;
      if (behaviour === 'deaf') await work(MODEL_SETTINGS.deafMs, undefined);
      else if (behaviour === 'hang') await work(MODEL_SETTINGS.timeoutMs + 30_000, ctx.signal);
      else await work(p.workMs, ctx.signal);
      if (behaviour === 'fail') throw new Error('planned failure');
    } catch (err) {
      outcome = ctx.signal.aborted ? 'aborted' : behaviour === 'fail' ? 'failed' : 'error';
      throw err;
    } finally {
      log?.end(ctx, outcome);
      if (effectId !== undefined) {
        // The end on the database clock; a lost write here costs the record's end, not the job.
        await ctx.db.query({ text: `UPDATE ${effects} SET ended_at = clock_timestamp(), outcome = $2 WHERE id = $1`, values: [effectId, outcome] }).catch(() => undefined);
      }
    }
  };
}

/** A job's limit key: its own, else one of MODEL_LIMIT_KEYS by its copy (a burst spreads over the keys). */
export function limitKeyOf(p: Pick<ModelPayload, 'lkey' | 'copy'>): string {
  return p.lkey ?? MODEL_LIMIT_KEYS[p.copy % MODEL_LIMIT_KEYS.length]!;
}

/** The `concurrency` option of a kind under the scenario's limits (undefined: none). */
function concurrencyOf(kind: 'alo' | 'amo', l: KindLimits | undefined) {
  const list = [
    ...(l?.total !== undefined ? [{ limit: l.total, name: limitName(kind, 'total') }] : []),
    ...(l?.perKey !== undefined ? [{ limit: l.perKey, name: limitName(kind, 'perKey'), key: (p: ModelPayload) => limitKeyOf(p) }] : []),
  ];
  return list.length > 0 ? { concurrency: list } : {};
}

/**
 * The two model kinds; `log` is the process's run log (worker processes only), `limits` the
 * scenario's fleet-wide limits (the producer and every worker declare the same).
 */
export function modelJobs(schema: string, log?: RunLog, limits?: ModelLimits) {
  const run = handler(schema, log);
  const common = { payload: modelPayload, queue: 'mq0', timeoutMs: MODEL_SETTINGS.timeoutMs, maxAttempts: MODEL_SETTINGS.maxAttempts, run };
  return {
    alo: defineJob({ ...common, kind: 'model-alo', backoff: MODEL_SETTINGS.backoff, ...concurrencyOf('alo', limits?.alo) }),
    amo: defineJob({ ...common, kind: 'model-amo', delivery: 'at-most-once', ...concurrencyOf('amo', limits?.amo) }),
  };
}
