import { describe, expect, it } from 'vitest';
import { definePipeline, type NightshiftEvent } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';
import { tempStore } from './support.js';

const t = useTestDatabase('plx');
t.migrateBeforeAll();
const q = () => `"${t.schema}"`;

function gate(): { wait: Promise<void>; open: () => void } {
  let open!: () => void;
  return { wait: new Promise<void>((r) => (open = r)), open };
}

describe('fencing', () => {
  it("refuses a stale worker's output: the attempt whose lease was taken writes nothing, though the step is still unrecorded", async () => {
    const gates = new Map([
      [1, gate()],
      [2, gate()],
    ]);
    const started = new Set<number>();
    const p = definePipeline({ name: 'fence', store: tempStore().store }).step('settle', async (ctx) => {
      await ctx.artifact(`attempt-${ctx.attempt}.json`, { attempt: ctx.attempt });
      started.add(ctx.attempt);
      // Paused (it neither heartbeats nor looks at its signal, as a frozen process would).
      await gates.get(ctx.attempt)!.wait;
      return { writtenBy: ctx.attempt };
    });
    // A heartbeat far beyond the test, so only the database decides who holds the lease.
    const ns = t.client({ pipelines: [p], leaseMs: 60_000, heartbeatMs: 50_000, pollIntervalMs: 20, concurrency: 2 });
    const events: NightshiftEvent[] = [];
    ns.on((e) => events.push(e));
    await ns.start();
    await ns.pipelines.start(p, 'k');
    await waitFor('the first attempt to be running', () => started.has(1));
    // The worker records a start once the handler has run 100 ms (a lease lost before that gives
    // the attempt back, and the next claim would be attempt 1 again).
    await waitFor('its start to be recorded', async () => (await t.sql.query(`SELECT 1 FROM ${q()}.jobs WHERE kind = 'pipeline:fence:settle' AND started_at IS NOT NULL`)).rowCount === 1);
    // Its lease expires; the rescuer gives the job back; the worker claims it again as attempt 2.
    await t.sql.query(`UPDATE ${q()}.jobs SET lease_expires_at = now() - interval '1 second' WHERE kind = 'pipeline:fence:settle'`);
    await ns.runMaintenance();
    await waitFor('attempt 2 to be running', () => started.has(2));
    // The stale attempt wakes first and records under its old token: the fence refuses it.
    gates.get(1)!.open();
    await waitFor('the stale write to be refused', () => events.some((e) => e.type === 'job.refused'));
    let detail = await ns.pipelines.getRun('fence', 'k');
    expect(detail.stepList[0]!.state).toBe('running');
    expect(detail.stepList[0]!.output).toBeNull();
    expect(detail.artifacts).toEqual([]);
    expect(events.find((e) => e.type === 'job.refused')).toMatchObject({ kind: 'pipeline:fence:settle', attempt: 1 });
    // The holder of the lease records.
    gates.get(2)!.open();
    await waitFor('attempt 2 to record the step', async () => (await ns.pipelines.getRun('fence', 'k')).state === 'succeeded');
    detail = await ns.pipelines.getRun('fence', 'k');
    expect(detail.stepList[0]!.output).toEqual({ writtenBy: 2 });
    expect(detail.artifacts.map((a) => [a.name, a.attempt])).toEqual([['attempt-2.json', 2]]);
  });
});
