import type { DrainLimitError, Executor } from 'nightshift';
import { assertEnqueued, createTestSchema, drain, refuteEnqueued, runJob, startEmbeddedPostgres, tick, type EmbeddedPostgresHandle, type TestSchema } from 'nightshift/testing';
// The sample app's own tests, written as a user writes them: they import nightshift only by its
// public names (`nightshift`, `nightshift/testing`), never from its sources. docs/testing.md quotes
// the regions marked below; test/testing/docs.test.ts checks that the quotes match.
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { chargeCard, createAccount, dailyDigest, sendWelcome, syncInbox } from './jobs.js';
import config from './nightshift.config.js';
import { billing, mailer } from './providers.js';
import { dailyReport } from './report.js';
import { signUp } from './signup.js';

// #region setup
let server: EmbeddedPostgresHandle | undefined;
let t: TestSchema;
let pool: pg.Pool;

beforeAll(async () => {
  // A real PostgreSQL: yours through DATABASE_URL, else a throw-away embedded one.
  const databaseUrl = process.env.DATABASE_URL ?? (server = await startEmbeddedPostgres()).url;
  // A schema of this file's own, migrated, with a client made from the app's config.
  t = await createTestSchema({ databaseUrl, config });
  pool = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  await pool.query(`CREATE TABLE "${t.schema}".users (id bigserial PRIMARY KEY, email text NOT NULL)`);
});

afterAll(async () => {
  await pool?.end();
  await t?.drop();
  await server?.destroy();
});
// #endregion

async function inTransaction<T>(fn: (tx: Executor) => Promise<T>): Promise<T> {
  const tx = await pool.connect();
  try {
    await tx.query('BEGIN');
    const result = await fn(tx);
    await tx.query('COMMIT');
    return result;
  } catch (err) {
    await tx.query('ROLLBACK');
    throw err;
  } finally {
    tx.release();
  }
}

describe('sample app', () => {
  // #region run-job
  it('creates the customer, returns its id, and enqueues the welcome mail', async () => {
    const outcome = await runJob(t.ns, createAccount, { userId: '42', email: 'ada@example.com' });
    expect(outcome.status).toBe('completed');
    expect(outcome.result).toEqual({ customerId: 'cus_42' });
    // The follow-up job waits in the queue; nothing ran it.
    await assertEnqueued(t.ns, sendWelcome, { email: 'ada@example.com' }, { count: 1 });
  });
  // #endregion

  // #region run-job-outcomes
  it('steers each reply of the payment provider', async () => {
    const charge = { customerId: 'cus_1', cents: 500 };
    billing.replies.push('declined', 'rate-limited', 'unreachable', 'unreachable');

    const declined = await runJob(t.ns, chargeCard, charge);
    expect(declined).toMatchObject({ status: 'discarded', control: { action: 'discard' }, job: { reason: 'card declined' } });

    const limited = await runJob(t.ns, chargeCard, charge);
    expect(limited).toMatchObject({ status: 'retry', control: { action: 'retry', delayMs: 30_000 } });

    const unreachable = await runJob(t.ns, chargeCard, charge);
    expect(unreachable.status).toBe('retry');
    expect(String(unreachable.error)).toContain('unreachable');

    // The same error on the last attempt discards the job.
    const last = await runJob(t.ns, chargeCard, charge, { attempt: chargeCard.maxAttempts });
    expect(last.status).toBe('discarded');
    expect(last.job.errors.at(-1)).toMatchObject({ attempt: 5, kind: 'error' });

    const large = await runJob(t.ns, chargeCard, { customerId: 'cus_1', cents: 250_000 });
    expect(large).toMatchObject({ status: 'held', job: { state: 'held' } });
  });
  // #endregion

  // #region drain
  it('signs a user up: the account is set up, then the welcome mail goes out', async () => {
    await inTransaction((tx) => signUp(t.ns, tx, 'grace@example.com'));
    const { jobs } = await drain(t.ns);
    const hers = jobs.filter((j) => (j.job.payload as { email?: string }).email === 'grace@example.com');
    expect(hers.map((j) => [j.kind, j.status])).toEqual([
      ['create-account', 'completed'],
      ['send-welcome', 'completed'],
    ]);
    expect(mailer.sent).toContainEqual(expect.objectContaining({ to: 'grace@example.com', subject: 'Welcome!' }));
  });
  // #endregion

  // #region drain-limit
  it('stops a chain of jobs that never ends', async () => {
    await t.ns.enqueue(syncInbox, { cursor: 0 });
    const err = (await drain(t.ns, { kinds: [syncInbox], maxJobs: 20 }).catch((e: unknown) => e)) as DrainLimitError;
    expect(err.code).toBe('NS_DRAIN_LIMIT');
    expect(err.ran).toHaveLength(20);
    // The 21st poll is still waiting; cancel it so later drains end.
    expect(await t.ns.cancelJobs({ kind: syncInbox.kind })).toBe(1);
  });
  // #endregion

  // #region enqueued-in-transaction
  it('enqueues the account set-up inside the sign-up transaction, and only if it commits', async () => {
    const tx = await pool.connect();
    try {
      await tx.query('BEGIN');
      await signUp(t.ns, tx, 'linus@example.com');
      // The transaction sees its own job; no one else does before it commits.
      await assertEnqueued(t.ns, createAccount, { email: 'linus@example.com' }, { db: tx });
      await refuteEnqueued(t.ns, createAccount, { email: 'linus@example.com' });
      await tx.query('ROLLBACK');
    } finally {
      tx.release();
    }
    await refuteEnqueued(t.ns, createAccount, { email: 'linus@example.com' });
  });
  // #endregion

  // #region pipeline
  it('runs the daily report step by step: every step a job, each output recorded', async () => {
    await t.ns.pipelines.start(dailyReport, '2026-11-29');
    const ran = await drain(t.ns, { kinds: dailyReport.spec.steps.map((s) => s.kind) });
    expect(ran.counts.completed).toBe(6); // load, the fan-out and its 3 items, total
    const run = await t.ns.pipelines.getRun('daily-report', '2026-11-29');
    expect(run.state).toBe('succeeded');
    expect(run.stepList.map((s) => [s.name, s.output])).toEqual([
      ['load', { day: '2026-11-29', rows: 3 }],
      ['score', null],
      ['total', 60],
    ]);
    expect((await t.ns.pipelines.verify(dailyReport, '2026-11-29')).ok).toBe(true);
  });
  // #endregion

  // #region tick
  it('sends the digest at 07:00 in Berlin, and after downtime the digests of the last two days', async () => {
    // The clock starts: a fleet first up at 06:00 in Berlin has nothing due.
    expect((await tick(t.ns, '2026-03-01T05:00:00Z')).fired).toEqual([]);
    const onTime = await tick(t.ns, '2026-03-01T06:00:00Z'); // 07:00 CET
    expect(onTime.fired).toMatchObject([{ schedule: 'daily-digest', at: new Date('2026-03-01T06:00:00Z'), late: false }]);
    await assertEnqueued(t.ns, dailyDigest, { day: '2026-03-01' }, { count: 1 });

    // Down until 07:30 three days later: the 2d catch-up window runs the digests of 3 and 4 March, late, and skips 2 March.
    const after = await tick(t.ns, '2026-03-04T06:30:00Z');
    expect(after.fired.map((f) => [f.at.toISOString(), f.late])).toEqual([
      ['2026-03-03T06:00:00.000Z', true],
      ['2026-03-04T06:00:00.000Z', true],
    ]);
    expect(after.skipped).toMatchObject([{ at: new Date('2026-03-02T06:00:00Z'), reason: 'catch-up', missed: 1 }]);

    await drain(t.ns, { kinds: [dailyDigest] });
    expect(mailer.sent.map((m) => m.subject).filter((s) => s.startsWith('Digest'))).toEqual(['Digest for 2026-03-01', 'Digest for 2026-03-03', 'Digest for 2026-03-04']);
  });
  // #endregion
});
