import pg from 'pg';
import { isNightshiftError } from '../../../src/index.js';
import { effectJobs } from '../fixtures/effect-jobs.js';
import { FaultInjector } from '../harness/injector.js';
import type { Scenario, ScenarioContext, ScenarioResult } from '../harness/scenario.js';

/** Parameters of scenario 6. */
export interface DedupeParams {
  connections: number;
  transactions: number;
  /** Keys of each kind of enqueue: dedupe only, and dedupe with debounce. */
  keys: number;
  /** Share of transactions rolled back. */
  rollbackRate: number;
  /** Enqueues per transaction: 1 up to this. */
  maxPerTransaction: number;
}

const full: DedupeParams = { connections: 32, transactions: 6_400, keys: 8, rollbackRate: 0.1, maxPerTransaction: 3 };
const short: DedupeParams = { connections: 32, transactions: 640, keys: 8, rollbackRate: 0.1, maxPerTransaction: 3 };

interface Attempt {
  key: string;
  n: number;
  /** Through the TypeScript API or the SQL function. */
  via: 'api' | 'sql';
  id: string;
  /** Reported by the API only. */
  deduped: boolean | undefined;
  tx: number;
}

async function run(ctx: ScenarioContext, p: DedupeParams): Promise<ScenarioResult> {
  const def = effectJobs(ctx.schema).atLeastOnce;
  const injector = new FaultInjector(ctx.admin, ctx.random);
  const ns = ctx.resources.nightshift({ jobs: [def] });
  const pool = new pg.Pool({ connectionString: ctx.url, max: p.connections, application_name: 'faults-enqueuer' });
  // An idle connection may report an error while the pool ends: it must not end the run.
  pool.on('error', () => undefined);
  ctx.resources.defer("the enqueuers' pool", () => pool.end());
  const q = ctx.recorder.q;
  const committed: Attempt[] = [];
  const rolledBack: Attempt[] = [];
  const abortedBy: Record<string, number> = {};
  let next = 0;
  let n = 0;
  const DEBOUNCE_MS = 3_600_000;
  const lane = async () => {
    for (;;) {
      const tx = next++;
      if (tx >= p.transactions) return;
      const client = await pool.connect();
      const mine: Attempt[] = [];
      let broken = false;
      try {
        await client.query('BEGIN');
        // Keys in a consistent order within a transaction, as docs/jobs.md advises: two
        // transactions taking the same keys in opposite orders deadlock (the database aborts one).
        const picks = Array.from({ length: ctx.random.int(1, p.maxPerTransaction) }, () => `${ctx.random.chance(0.5) ? 'b' : 'd'}${ctx.random.int(0, p.keys - 1)}`).sort();
        for (const key of picks) {
          const debounce = key.startsWith('b');
          const payload = { n: n++ };
          if (ctx.random.chance(0.5)) {
            const r = await ns.enqueue(def, payload, { db: client, dedupeKey: key, ...(debounce ? { debounceMs: DEBOUNCE_MS } : {}) });
            mine.push({ key, n: payload.n, via: 'api', id: r.id, deduped: r.deduped, tx });
          } else {
            const { rows } = await client.query<{ id: string }>(`SELECT ${q}.enqueue('effect', $1::jsonb, dedupe_key => $2, debounce => $3::float8 * interval '1 millisecond')::text AS id`, [
              JSON.stringify(payload),
              key,
              debounce ? DEBOUNCE_MS : null,
            ]);
            mine.push({ key, n: payload.n, via: 'sql', id: rows[0]!.id, deduped: undefined, tx });
          }
        }
        if (ctx.random.chance(p.rollbackRate)) {
          await client.query('ROLLBACK');
          injector.record('rollback', null, `transaction ${tx}`);
          rolledBack.push(...mine);
        } else {
          await client.query('COMMIT');
          committed.push(...mine);
        }
      } catch (err) {
        // A deadlock between two transactions taking the same keys in another order: the
        // database aborts one. Nothing of it may remain.
        const code = (isNightshiftError(err) ? (err as { sqlState?: string }).sqlState : (err as { code?: string }).code) ?? 'unknown';
        abortedBy[code] = (abortedBy[code] ?? 0) + 1;
        rolledBack.push(...mine);
        await client.query('ROLLBACK').catch(() => (broken = true));
      } finally {
        client.release(broken);
      }
    }
  };
  await Promise.all(Array.from({ length: p.connections }, lane));
  await ctx.recorder.writeFaults(injector.seal());

  const { rows: jobs } = await ctx.admin.query<{ id: string; key: string; n: number; state: string }>(
    `SELECT id::text, dedupe_key AS key, (payload->>'n')::int AS n, state::text FROM ${q}.jobs_all WHERE kind = 'effect'`,
  );
  const keys = [...new Set([...committed, ...rolledBack].map((a) => a.key))].sort();
  const missing: string[] = [];
  const extra: string[] = [];
  const wrongIds: string[] = [];
  const foreignPayload: string[] = [];
  const rolledBackN = new Set(rolledBack.map((a) => a.n));
  for (const key of keys) {
    const mine = committed.filter((a) => a.key === key);
    const held = jobs.filter((j) => j.key === key);
    if (mine.length === 0) {
      if (held.length) extra.push(`key ${key}: only rolled-back enqueues, yet ${held.length} job(s)`);
      continue;
    }
    if (held.length === 0) {
      missing.push(`key ${key}: ${mine.length} committed enqueues, no job`);
      continue;
    }
    if (held.length > 1) extra.push(`key ${key}: ${held.length} jobs`);
    const job = held[0]!;
    const ids = new Set(mine.map((a) => a.id));
    if (ids.size !== 1 || !ids.has(job.id)) wrongIds.push(`key ${key}: committed enqueues returned ids ${[...ids].join(',')}, the job is ${job.id}`);
    // The API says whether it created the job: among committed enqueues at most one did, and
    // when every committed enqueue went through the API, exactly one.
    const created = mine.filter((a) => a.deduped === false).length;
    if (created > 1 || (mine.every((a) => a.via === 'api') && created !== 1)) wrongIds.push(`key ${key}: ${created} committed enqueues reported creating the job`);
    if (!mine.some((a) => a.n === job.n)) foreignPayload.push(`key ${key}: the job's payload n=${job.n} is from no committed enqueue`);
  }
  for (const j of jobs) if (rolledBackN.has(j.n)) foreignPayload.push(`job ${j.id} carries rolled-back payload n=${j.n}`);
  for (const j of jobs) if (!keys.includes(j.key)) extra.push(`job ${j.id} with key ${j.key}`);
  return {
    id: '6-dedupe-debounce',
    title: `dedupe and debounce from ${p.connections} connections at once (API and SQL function), ${Math.round(p.rollbackRate * 100)} % rolled back`,
    faults: injector.counts(),
    jobs: jobs.length,
    unit: 'jobs',
    lost: missing.length,
    duplicates: { explained: 0, unexplained: extra.length },
    maxRecoveryMs: null,
    recovery: '— (no outage)',
    invariants: [
      { name: 'one job per key that some committed transaction enqueued, none for the others', holds: missing.length + extra.length === 0, detail: [...missing, ...extra].slice(0, 5).join('; ') },
      { name: 'every committed enqueue of a key returned that job; one reported creating it', holds: wrongIds.length === 0, detail: wrongIds.slice(0, 5).join('; ') },
      { name: 'every job carries a committed payload, never one of a rolled-back or aborted transaction', holds: foreignPayload.length === 0, detail: foreignPayload.slice(0, 5).join('; ') },
    ],
    figures: {
      transactions: p.transactions,
      'enqueues committed / rolled back or aborted': `${committed.length} / ${rolledBack.length}`,
      'transactions aborted by the database': JSON.stringify(abortedBy),
      keys: keys.length,
    },
    durationMs: 0,
  };
}

/** Scenario 6: dedupe and debounce under concurrent, partly rolled-back transactions. */
export const dedupeConcurrency: Scenario<DedupeParams> = {
  id: '6-dedupe-debounce',
  title: 'dedupe and debounce from 32 connections at once, 10 % rolled back',
  restartsServer: false,
  sizes: { full, short },
  run,
};
