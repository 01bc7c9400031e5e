import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob, type NightshiftEvent } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';

const t = useTestDatabase();
t.migrateBeforeAll();

const payload = z.object({ n: z.number() });

describe('wake-ups', () => {
  // The idle poll is an hour here, so a job can only start soon through a notification.
  const HOUR = 3_600_000;

  it('starts a job enqueued into an idle worker through LISTEN/NOTIFY', async () => {
    const ran: number[] = [];
    const job = defineJob({ kind: 'wake', payload, queue: 'wake1', run: async ({ n }) => void ran.push(n) });
    const ns = t.client({ jobs: [job], pollIntervalMs: HOUR });
    let idle = false;
    ns.on((e) => {
      if (e.type === 'worker.claimed' && e.queue === 'wake1' && e.count === 0) idle = true;
    });
    await ns.start();
    await waitFor('the listener to connect', () => ns.listening);
    await waitFor('the worker to find the queue empty', () => idle);
    await ns.enqueue(job, { n: 1 });
    await waitFor('the job to run', () => ran.length === 1, { timeoutMs: 20_000 });
  });

  it('reconnects a lost listener, fetches at once, and is woken again afterwards', async () => {
    const ran: number[] = [];
    const job = defineJob({ kind: 'wake2', payload, queue: 'wake2', run: async ({ n }) => void ran.push(n) });
    const owner = `wake-${t.schema}`;
    const ns = t.client({ jobs: [job], pollIntervalMs: HOUR, owner });
    const events: NightshiftEvent[] = [];
    ns.on((e) => events.push(e));
    await ns.start();
    await waitFor('the listener to connect', () => ns.listening);
    // Terminate the listener's backend from the server side, as a failover or a proxy would.
    const killed = await t.sql.query(`SELECT pg_terminate_backend(pid) AS ok FROM pg_stat_activity WHERE application_name = $1`, [`nightshift:${owner}:listener`]);
    expect(killed.rows.some((r: { ok: boolean }) => r.ok)).toBe(true);
    await waitFor('the loss to be noticed', () => events.some((e) => e.type === 'listener.lost'));
    // A job enqueued while it was down is fetched on reconnect (no notification reached anyone).
    await ns.enqueue(job, { n: 1 });
    await waitFor('the listener to reconnect', () => events.filter((e) => e.type === 'listener.connected').length >= 2 && ns.listening);
    await waitFor('the job enqueued during the outage to run', () => ran.includes(1), { timeoutMs: 20_000 });
    await ns.enqueue(job, { n: 2 });
    await waitFor('a job after the reconnect to run', () => ran.includes(2), { timeoutMs: 20_000 });
  });

  it('still runs jobs by polling when LISTEN is off', async () => {
    const ran: number[] = [];
    const job = defineJob({ kind: 'poll', payload, queue: 'poll', run: async ({ n }) => void ran.push(n) });
    const ns = t.client({ jobs: [job], listen: false, pollIntervalMs: 100 });
    await ns.start();
    expect(ns.listening).toBe(false);
    await ns.enqueue(job, { n: 1 });
    await waitFor('the job to run by polling', () => ran.length === 1);
  });
});
