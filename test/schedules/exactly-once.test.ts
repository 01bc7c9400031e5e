import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob } from '../../src/index.js';
import { defineSchedule } from '../../src/schedules/define-schedule.js';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';
import { useTickers } from './support.js';

const t = useTestDatabase('sched');
t.migrateBeforeAll();
const replica = useTickers(t);

interface TickJob {
  tick_at: Date;
  outcome: string;
  job_id: string | null;
  payload: { at: string; pid?: number } | null;
}

async function ticksWithJobs(name: string): Promise<TickJob[]> {
  const { rows } = await t.sql.query<TickJob>(
    `SELECT k.tick_at, k.outcome, k.job_id::text, j.payload FROM "${t.schema}".schedule_ticks k
     LEFT JOIN "${t.schema}".jobs_all j ON j.id = k.job_id WHERE k.schedule = $1 ORDER BY k.tick_at`,
    [name],
  );
  return rows;
}

/** Every second from the first tick to the last has exactly one row, each with its own job. */
function expectEveryTickOnce(rows: TickJob[]): void {
  expect(rows.length).toBeGreaterThan(0);
  const first = rows[0]!.tick_at.getTime();
  rows.forEach((r, i) => {
    expect(r.tick_at.getTime()).toBe(first + i * 1000);
    expect(r.outcome).toBe('enqueued');
    expect(r.job_id).not.toBeNull();
    expect(r.payload?.at).toBe(r.tick_at.toISOString());
  });
  expect(new Set(rows.map((r) => r.job_id)).size).toBe(rows.length);
}

describe('each tick runs exactly once across replicas', () => {
  it('four tickers on separate pools race for a one-second schedule: one row and one job per tick', async () => {
    const job = defineJob({ kind: 'race', payload: z.object({ at: z.string() }), run: () => undefined });
    const schedule = defineSchedule({ name: 'race', every: '1s', job, payload: ({ at }) => ({ at: at.toISOString() }), overlap: 'allow', catchUp: { all: true, window: '1h' } });
    const replicas = [1, 2, 3, 4].map(() => replica([schedule], [job]));
    await Promise.all(replicas.map((r) => r.ticker.start()));
    await waitFor('eight ticks', async () => (await ticksWithJobs('race')).length >= 8);
    await Promise.all(replicas.map((r) => r.ticker.stop()));
    const rows = await ticksWithJobs('race');
    expectEveryTickOnce(rows);
    expect(await t.jobCount('race')).toBe(rows.length);
    // Each tick was fired by exactly one of the replicas.
    const fired = replicas.map((r) => r.seen.filter((e) => e.type === 'schedule.fired').length);
    expect(fired.reduce((a, b) => a + b, 0)).toBe(rows.length);
  });

  it('three processes, one SIGKILLed and restarted midway: no tick lost, none doubled', { timeout: 120_000 }, async () => {
    const fixture = fileURLToPath(new URL('./fixtures/ticker-process.ts', import.meta.url));
    const children = new Set<ChildProcess>();
    const launch = async (): Promise<ChildProcess> => {
      const child = spawn(process.execPath, ['--import', 'tsx', fixture], {
        env: { ...process.env, NS_URL: t.url, NS_SCHEMA: t.schema },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      children.add(child);
      let out = '';
      let err = '';
      child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
      child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
      child.on('exit', () => children.delete(child));
      await waitFor(`replica ${child.pid} to be ready${err ? ` (stderr: ${err.slice(0, 500)})` : ''}`, () => {
        if (child.exitCode !== null) throw new Error(`replica exited with ${child.exitCode}: ${err}`);
        return out.includes('ready');
      });
      return child;
    };
    const exited = (c: ChildProcess) => new Promise<void>((r) => (c.exitCode !== null || c.signalCode !== null ? r() : c.once('exit', () => r())));
    try {
      const procs = [await launch(), await launch(), await launch()];
      const count = async () => (await ticksWithJobs('beat')).length;
      await waitFor('three ticks', async () => (await count()) >= 3);
      procs[1]!.kill('SIGKILL');
      await exited(procs[1]!);
      const atKill = await count();
      await waitFor('three ticks after the kill', async () => (await count()) >= atKill + 3);
      procs[1] = await launch();
      const atRestart = await count();
      await waitFor('three ticks after the restart', async () => (await count()) >= atRestart + 3);
      for (const p of procs) p.kill('SIGTERM');
      await Promise.all(procs.map(exited));
      const rows = await ticksWithJobs('beat');
      expectEveryTickOnce(rows);
      expect(await t.jobCount('beat')).toBe(rows.length);
    } finally {
      for (const c of children) c.kill('SIGKILL');
    }
  });
});
