import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob } from '../../src/index.js';
import type { Clock } from '../../src/lifecycle/clock.js';
import { ActiveJobs, type ActiveJob } from '../../src/worker/active-jobs.js';
import { QueueFetcher, type FetcherHost } from '../../src/worker/queue-fetcher.js';
import { Slots } from '../../src/worker/slots.js';
import { ManualClock } from '../lifecycle/manual-clock.js';
import { useTestDatabase } from '../support/db.js';
import { observedDatabase } from '../support/observed-database.js';
import { waitFor } from '../support/wait.js';

// One queue's claim loop deciding when to claim and how many (its `wants()`), against the real
// database. The host — the worker's side: slots, room for leases, dispatch — is played by the
// test, so each decision is driven by the limits alone. The loop polls once an hour here: every
// claim it makes is one the test caused.

const t = useTestDatabase('unit_qf');
t.migrateBeforeAll();

const cleanups: (() => Promise<unknown>)[] = [];

afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

let queues = 0;

/**
 * A fetcher of a queue of its own over `jobs` available jobs, with the given limits. `maxHeld()` is how many
 * leases the process may hold; room is that less the jobs it holds, as in the worker.
 */
async function setup(o: { jobs: number; global: Slots; local: Slots; maxHeld?: () => number; clock?: Clock }) {
  const queue = `qf-${++queues}`;
  const def = defineJob({ kind: queue, queue, payload: z.object({ n: z.number() }), run: () => undefined });
  const db = observedDatabase(t.url, t.schema);
  cleanups.push(() => db.close());
  await t.client({ jobs: [def] }).enqueueMany(
    def,
    Array.from({ length: o.jobs }, (_, n) => ({ n })),
  );
  const active = new ActiveJobs();
  const started: ActiveJob[] = [];
  const claims: { asked: number; count: number }[] = [];
  const errors: unknown[] = [];
  let roomAsked = 0;
  const host: FetcherHost = {
    hold: (row) => active.add(row),
    start: (job) => void started.push(job),
    expired: () => undefined,
    expireHeld: () => undefined,
    room: () => {
      roomAsked++;
      return (o.maxHeld ? o.maxHeld() : 100) - active.size;
    },
    slotsFreed: () => undefined,
    onError: (err) => void errors.push(err),
    onClaimed: (_queue, asked, count) => void claims.push({ asked, count }),
  };
  const fetcher = new QueueFetcher({
    database: db.db,
    queue,
    kinds: [queue],
    owner: 'unit-fetcher',
    leaseMs: 60_000,
    minPollMs: 3_600_000,
    maxPollMs: 3_600_000,
    prefetch: 0,
    global: o.global,
    local: o.local,
    host,
    ...(o.clock ? { clock: o.clock } : {}),
  });
  cleanups.push(() => fetcher.stop());
  return { def, queue, db, fetcher, started, claims, errors, roomAsked: () => roomAsked, claimsSent: () => db.names().filter((n) => n === 'job_claim').length };
}

/** Lets every pending callback and promise of the loop run (a claim it decided on is sent by then). */
const turns = async (n = 3) => {
  for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
};

describe('QueueFetcher: when to claim', () => {
  it('claims for its free slots at once (as many as the queue and the process both allow) and starts them', async () => {
    const s = await setup({ jobs: 5, global: new Slots(3), local: new Slots(2) });
    await s.fetcher.start();
    await waitFor('two jobs to start', () => s.started.length === 2);
    expect(s.claims[0]).toEqual({ asked: 2, count: 2 });
    expect(s.errors).toEqual([]);
  });

  it('with every slot of the process busy and nothing held, waits for the next slot in turn, then claims one job for it', async () => {
    const global = new Slots(1);
    global.take(1); // another queue's job runs
    const s = await setup({ jobs: 3, global, local: new Slots(5) });
    await s.fetcher.start();
    await waitFor('the fetcher to wait for a slot', () => global.contended);
    expect(s.claimsSent()).toBe(0);

    global.give(1);
    await waitFor('the job claimed for that slot to start', () => s.started.length === 1);
    expect(s.claims).toEqual([{ asked: 1, count: 1 }]);
    // Claimed (running), its start not recorded by the claim: the worker records it (issue 11, bug 3).
    const { rows } = await t.sql.query(`SELECT count(*)::int AS n FROM "${t.schema}".jobs_all WHERE queue = $1 AND state = 'running' AND started_at IS NULL`, [s.queue]);
    expect(rows[0].n).toBe(1);
    // Every slot is busy again: it waits in turn once more, and stop() withdraws that wait.
    await waitFor('the fetcher to wait for the next slot', () => global.contended);
    await s.fetcher.stop();
    expect(global.contended).toBe(false);
    expect(global.inUse).toBe(1);
  });

  it("claims nothing while the queue's own limit is full, and claims once a slot of it frees and the worker says so", async () => {
    const local = new Slots(1);
    local.take(1);
    const s = await setup({ jobs: 3, global: new Slots(5), local });
    await s.fetcher.start();
    await waitFor('the loop to weigh a claim', () => s.roomAsked() > 0);
    await turns();
    expect(s.claimsSent()).toBe(0);

    local.give(1);
    s.fetcher.checkNeed();
    await waitFor('the job claimed for the freed slot to start', () => s.started.length === 1);
    expect(s.claims).toEqual([{ asked: 1, count: 1 }]);
  });

  it('claims nothing while the process holds all the leases it may, and claims only what room allows once some free', async () => {
    let maxHeld = 0;
    const s = await setup({ jobs: 5, global: new Slots(5), local: new Slots(5), maxHeld: () => maxHeld });
    await s.fetcher.start();
    await waitFor('the loop to weigh a claim', () => s.roomAsked() > 0);
    await turns();
    expect(s.claimsSent()).toBe(0);

    maxHeld = 2;
    s.fetcher.checkNeed();
    await waitFor('the jobs claimed for the room to start', () => s.started.length === 2);
    expect(s.claims).toEqual([{ asked: 2, count: 2 }]);
  });

  it('gives back the slots it took for a claim that found fewer jobs, so other queues can use them', async () => {
    const global = new Slots(4);
    const s = await setup({ jobs: 1, global, local: new Slots(4) });
    await s.fetcher.start();
    await waitFor('the one job to start', () => s.started.length === 1);
    expect(s.claims[0]).toEqual({ asked: 4, count: 1 });
    // The started job keeps its slot; the three taken for jobs that did not exist are free again.
    expect(global.inUse).toBe(1);
  });
});

describe('QueueFetcher: a job due in the future', () => {
  it('a due-time wake-up that comes before the database’s clock reaches the job asks again when it is due', async () => {
    // The clock is moved by hand past the due time the database gave, while the database's own
    // clock has moved on by milliseconds: the wake-up is early, as a Node timer can be by a few
    // milliseconds. Its claim finds nothing due; it must arm a new wake-up for the job, not
    // leave it to the hour-long poll.
    const clock = new ManualClock();
    const f = await setup({ jobs: 0, global: new Slots(4), local: new Slots(4), clock });
    const { id } = await t.client({ jobs: [f.def] }).enqueue(f.def, { n: 1 }, { delayMs: 600_000 });
    const nextDue = () => f.db.names().filter((n) => n === 'job_next_due').length;
    await f.fetcher.start();
    await waitFor('the first claim to ask when the next job is due', () => nextDue() === 1);
    await waitFor('the loop to sleep until the job is due', () => clock.pendingIn.some((ms) => ms > 590_000 && ms <= 600_000));
    await clock.advance(600_000);
    await waitFor('the early wake-up’s claim to ask again', () => nextDue() === 2);
    expect(f.claimsSent()).toBe(2);
    // A wake-up for the job again: at about its due time, not the poll's hour.
    await waitFor('a new wake-up to be armed', () => clock.pendingIn.some((ms) => ms > 590_000 && ms <= 600_000));
    expect(f.started).toEqual([]);
    expect((await t.sql.query(`SELECT state::text FROM "${t.schema}".jobs WHERE id = $1`, [id])).rows[0].state).toBe('available');
  });

  it('a job that becomes due between the empty claim and the question when the next one is due is claimed at once', async () => {
    // The early wake-up's claim finds nothing; by the time its question reaches the database the
    // job is due. The question must still answer with it (due now), not with "nothing ahead",
    // which left the job to the hour-long poll (CI: due-wakeups started a job at the 12.75 s probe).
    const f = await setup({ jobs: 0, global: new Slots(4), local: new Slots(4) });
    const { id } = await t.client({ jobs: [f.def] }).enqueue(f.def, { n: 1 }, { delayMs: 1_500 });
    const release = f.db.hold('job_next_due');
    await f.fetcher.start();
    await waitFor('the question when the next job is due to be sent', () => f.db.names().includes('job_next_due'));
    expect(f.claims).toEqual([{ asked: 4, count: 0 }]);
    await waitFor('the job to be due on the database clock', async () => (await t.sql.query(`SELECT run_at <= now() AS due FROM "${t.schema}".jobs WHERE id = $1`, [id])).rows[0].due);
    release();
    await waitFor('the job to start', () => f.started.length === 1, { timeoutMs: 20_000 });
    expect(f.started[0]!.row.id).toBe(id);
    expect(f.claimsSent()).toBe(2);
  });
});
