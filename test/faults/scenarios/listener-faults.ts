import { waitFor } from '../../support/wait.js';
import { checkAtLeastOnce } from '../harness/checker.js';
import type { Member } from '../harness/fleet.js';
import { FaultInjector, ownerPid } from '../harness/injector.js';
import type { Scenario, ScenarioContext, ScenarioResult } from '../harness/scenario.js';

/** Parameters of scenario 7. */
export interface ListenerParams {
  /** Each round kills both workers' LISTEN connections, then silently cuts them. */
  rounds: number;
  timeoutMs: number;
}

const full: ListenerParams = { rounds: 3, timeoutMs: 120_000 };
const short: ListenerParams = { rounds: 1, timeoutMs: 120_000 };

const count = (text: string, marker: string) => text.split(marker).length - 1;

/** The timestamps of `listener connected <ms>` lines in a process's output. */
function connects(m: Member): number[] {
  return [...m.proc.output().matchAll(/listener connected (\d+)/g)].map((x) => Number(x[1]));
}

async function run(ctx: ScenarioContext, p: ListenerParams): Promise<ScenarioResult> {
  const proxy = await ctx.resources.proxy();
  const injector = new FaultInjector(ctx.admin, ctx.random);
  const q = ctx.recorder.q;
  const fleet = ctx.resources.fleet('test/faults/fixtures/fault-worker.ts', { DATABASE_URL: proxy.url(ctx.url), NS_SCHEMA: ctx.schema, NS_MAINTENANCE_MS: '500' });
  const enqueue = async (queue: string, n: number): Promise<string> => {
    const { rows } = await ctx.admin.query<{ id: string }>(`SELECT ${q}.enqueue('effect', jsonb_build_object('n', $1::int), queue => $2)::text AS id`, [n, queue]);
    return rows[0]!.id;
  };
  const completed = (id: string) => async () => (await ctx.admin.query(`SELECT state FROM ${q}.jobs_all WHERE id = $1`, [id])).rows[0]?.state === 'completed';
  const reconnectMs: Record<'kill' | 'cut', number[]> = { kill: [], cut: [] };
  const startedWhileDown: string[] = [];
  const wokenAfter: string[] = [];
  let n = 0;
  // A polls every 500 ms: its jobs start by polling while its listener is down. B polls once an
  // hour: its jobs start only when a notification (or a reconnect's catch-up fetch) wakes it.
  const a = await fleet.start({ env: { NS_QUEUE: 'qa', NS_POLL_MS: '500' } });
  const b = await fleet.start({ env: { NS_QUEUE: 'qb', NS_POLL_MS: '3600000' } });
  const pids = new Set([a.proc.pid, b.proc.pid]);
  for (let round = 0; round < p.rounds; round++) {
    for (const mode of ['kill', 'cut'] as const) {
      const before = { a: connects(a).length, b: connects(b).length };
      const at = Date.now();
      if (mode === 'kill') {
        await injector.terminateBackends({ count: 2, pids, listenerOnly: true, newestOnly: true });
      } else {
        const cut = proxy.cut((name) => name.endsWith(':listener') && pids.has(ownerPid(name) ?? -1));
        for (const name of cut) injector.record('listener-cut', ownerPid(name), `${name} silently cut`, at);
      }
      // Jobs enqueued while the listeners are down: no notification reaches anyone.
      const ja = await enqueue('qa', n++);
      const jb = await enqueue('qb', n++);
      await waitFor(`A's job enqueued during the ${mode} to start`, completed(ja), { timeoutMs: p.timeoutMs, everyMs: 100 });
      if (connects(a).length === before.a) startedWhileDown.push(`${mode}: job ${ja}`);
      for (const [m, name] of [
        [a, 'A'],
        [b, 'B'],
      ] as const) {
        const had = name === 'A' ? before.a : before.b;
        await waitFor(`${name}'s listener to reconnect after the ${mode}`, () => connects(m).length > had, { timeoutMs: p.timeoutMs, everyMs: 100 });
        reconnectMs[mode].push(connects(m)[had]! - at);
      }
      await waitFor(`B's job enqueued during the ${mode} to start after the reconnect`, completed(jb), { timeoutMs: p.timeoutMs, everyMs: 100 });
      // After the reconnect, a notification wakes each worker again.
      for (const [m, queue] of [
        [a, 'qa'],
        [b, 'qb'],
      ] as const) {
        const mark = m.proc.output().length;
        const id = await enqueue(queue, n++);
        await waitFor(`a notification for ${queue} after the ${mode}`, () => count(m.proc.output().slice(mark), `notified ${queue} `) > 0, { timeoutMs: p.timeoutMs, everyMs: 100 });
        await waitFor(`the job after the ${mode} on ${queue} to start`, completed(id), { timeoutMs: p.timeoutMs, everyMs: 100 });
        wokenAfter.push(`${mode}/${queue}`);
      }
    }
  }
  await fleet.stopAll();
  await ctx.recorder.writeFaults(injector.seal());
  const report = await checkAtLeastOnce(ctx.recorder, 'effect');
  const { rows: waits } = await ctx.admin.query<{ queue: string; ms: number }>(
    `SELECT queue, max(extract(epoch FROM started_at - created_at) * 1000)::float8 AS ms FROM ${q}.jobs_all WHERE kind = 'effect' GROUP BY queue ORDER BY queue`,
  );
  const all = [...reconnectMs.kill, ...reconnectMs.cut];
  return {
    id: '7-listener',
    title: 'LISTEN connections killed (pg_terminate_backend) and silently cut (proxy drops the flow)',
    faults: injector.counts(),
    jobs: report.jobs,
    unit: 'jobs',
    lost: report.lost,
    duplicates: report.duplicates,
    maxRecoveryMs: all.length ? Math.max(...all) : null,
    recovery: 'longest time from the fault to the listener listening again (a silent cut is found by the 15 s health check)',
    invariants: [
      ...report.invariants,
      {
        name: 'after every reconnect a notification woke each worker again',
        holds: wokenAfter.length === p.rounds * 4,
        detail: wokenAfter.length === p.rounds * 4 ? '' : `woken: ${wokenAfter.join(', ')}`,
      },
    ],
    figures: {
      'reconnect after a kill (ms)': reconnectMs.kill.join(', '),
      'reconnect after a silent cut (ms)': reconnectMs.cut.join(', '),
      'jobs of the 500 ms-polling worker that started before its listener came back': `${startedWhileDown.length} of ${p.rounds * 2}`,
      'longest wait from enqueue to start, by queue (ms)': waits.map((w) => `${w.queue} ${Math.round(w.ms)}`).join(', '),
    },
    durationMs: 0,
  };
}

/** Scenario 7: jobs still start with the listener down, and wake-ups come back after it reconnects. */
export const listenerFaults: Scenario<ListenerParams> = {
  id: '7-listener',
  title: 'LISTEN connections killed (pg_terminate_backend) and silently cut (proxy drops the flow)',
  restartsServer: false,
  sizes: { full, short },
  run,
};
