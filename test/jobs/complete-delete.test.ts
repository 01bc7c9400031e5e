import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob, type NightshiftEvent } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';

const t = useTestDatabase();
t.migrateBeforeAll();

const payload = z.object({ n: z.number() });
const q = () => `"${t.schema}"`;

describe('retention.completed = 0', () => {
  it('deletes each job as it completes, fenced by its token like a kept completion', async () => {
    const ran: number[] = [];
    const job = defineJob({ kind: 'cd-ok', payload, queue: 'cd-ok', run: ({ n }) => void ran.push(n) });
    const ns = t.client({ jobs: [job], retention: { completed: 0 } });
    const completed: string[] = [];
    ns.on((e: NightshiftEvent) => e.type === 'job.completed' && completed.push(e.jobId));
    const ids = (
      await ns.enqueueMany(
        job,
        Array.from({ length: 50 }, (_, n) => ({ n })),
      )
    ).map((r) => r.id);
    await ns.start();
    await waitFor('every job to complete', () => completed.length === 50);
    const left = await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.jobs_all WHERE id = ANY($1::bigint[])`, [ids]);
    expect(left.rows[0].n).toBe(0);
    expect(ran.sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, n) => n));
  });

  it('refuses a stale completion: a job re-claimed under a newer token is not deleted', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const job = defineJob({ kind: 'cd-stale', payload, queue: 'cd-stale', run: async () => gate });
    const a = t.client({ jobs: [job], retention: { completed: 0 }, leaseMs: 3_600_000, heartbeatMs: 1_200_000, maintenance: false, concurrency: 1 });
    const events: NightshiftEvent[] = [];
    a.on((e) => events.push(e));
    const { id } = await a.enqueue(job, { n: 1 });
    await a.start();
    await waitFor('A to hold the job', async () => (await t.sql.query(`SELECT state FROM ${q()}.jobs_all WHERE id = $1`, [id])).rows[0].state === 'running');
    // Another claim takes the job over (as a rescue and re-claim would), with a newer token.
    await t.sql.query(`UPDATE ${q()}.jobs SET lease_token = nextval('${t.schema}.lease_token_seq') WHERE id = $1`, [id]);
    release();
    await waitFor('A to report the refused write', () => events.some((e) => e.type === 'job.refused'));
    const row = await t.sql.query(`SELECT state FROM ${q()}.jobs_all WHERE id = $1`, [id]);
    expect(row.rows[0]?.state).toBe('running');
  });
});
