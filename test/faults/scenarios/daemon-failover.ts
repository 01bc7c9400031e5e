import { waitFor } from '../../support/wait.js';
import { FaultInjector } from '../harness/injector.js';
import type { Scenario, ScenarioContext, ScenarioResult } from '../harness/scenario.js';

/** Parameters of scenario 5. */
export interface DaemonFailoverParams {
  processes: number;
  /** Faults on the holder: killed and paused by turns. */
  rounds: number;
  ttlMs: number;
  timeoutMs: number;
}

const full: DaemonFailoverParams = { processes: 3, rounds: 12, ttlMs: 1_500, timeoutMs: 60_000 };
const short: DaemonFailoverParams = { processes: 3, rounds: 2, ttlMs: 1_500, timeoutMs: 60_000 };

interface Term {
  pid: number;
  token: string;
}

async function run(ctx: ScenarioContext, p: DaemonFailoverParams): Promise<ScenarioResult> {
  const q = ctx.recorder.q;
  await ctx.admin.query(`
    CREATE TABLE ${q}.mp_records (id bigserial PRIMARY KEY, token bigint NOT NULL, pid int NOT NULL, at timestamptz NOT NULL);
    CREATE TABLE ${q}.mp_refusals (id bigserial PRIMARY KEY, token bigint NOT NULL, pid int NOT NULL, at timestamptz NOT NULL DEFAULT now(), message text)`);
  const injector = new FaultInjector(ctx.admin, ctx.random);
  // The leadership suite's daemon process: a `recorder` daemon writing (token, pid, now()) through
  // fenced transactions every 25 ms without looking at its signal, and recording refused writes.
  const fleet = ctx.resources.fleet('test/leadership/fixtures/daemon-process.ts', { NS_TEST_DATABASE_URL: ctx.url, NS_TEST_SCHEMA: ctx.schema, NS_TEST_TTL_MS: String(p.ttlMs) });
  const current = async (): Promise<Term | undefined> => {
    const { rows } = await ctx.admin.query<{ holder: string; token: string; n: number }>(
      `SELECT l.holder, l.token::text, (SELECT count(*)::int FROM ${q}.mp_records r WHERE r.token = l.token) AS n
       FROM ${q}.leases l WHERE l.name = 'daemon:recorder' AND l.expires_at > now()`,
    );
    const r = rows[0];
    return r && r.n > 0 ? { pid: Number(r.holder.split(':').at(-1)), token: r.token } : undefined;
  };
  const takeovers: { fault: string; ms: number }[] = [];
  const wokenRefused: string[] = [];
  await Promise.all(Array.from({ length: p.processes }, () => fleet.start()));
  for (let round = 0; round < p.rounds; round++) {
    const holder = await waitFor('a holder that is acting', current, { timeoutMs: p.timeoutMs, everyMs: 50 });
    const member = fleet.byPid(holder.pid);
    if (!member) throw new Error(`the holder ${holder.pid} is not one of this run's processes`);
    const pause = round % 2 === 1;
    const at = Date.now();
    let resume: (() => void) | undefined;
    if (pause) resume = injector.pause(member);
    else await injector.kill(member);
    const next = await waitFor(
      'a new holder acting under a new token',
      async () => {
        const t = await current();
        return t && t.token !== holder.token ? t : undefined;
      },
      { timeoutMs: p.timeoutMs, everyMs: 25 },
    );
    const { rows } = await ctx.admin.query<{ first: Date }>(`SELECT min(at) AS first FROM ${q}.mp_records WHERE token = $1`, [next.token]);
    takeovers.push({ fault: pause ? 'pause' : 'kill', ms: rows[0]!.first.getTime() - at });
    if (resume) {
      resume();
      // Woken, it writes once more under its old token: the write must be refused.
      await waitFor('the woken holder to notice it was deposed', async () => member.proc.output().includes(`refused ${holder.token}`) || member.proc.output().includes(`deposed ${holder.token}`), {
        timeoutMs: p.timeoutMs,
        everyMs: 100,
      });
      if (member.proc.output().includes(`refused ${holder.token}`)) wokenRefused.push(holder.token);
    } else {
      await fleet.start();
    }
  }
  await fleet.stopAll();
  await ctx.recorder.writeFaults(injector.seal());
  const { rows: records } = await ctx.admin.query<{ token: string; pid: number }>(`SELECT token::text, pid FROM ${q}.mp_records ORDER BY id`);
  const backwards: string[] = [];
  const pidOf = new Map<string, number>();
  const shared: string[] = [];
  for (let i = 0; i < records.length; i++) {
    const r = records[i]!;
    if (i > 0 && BigInt(r.token) < BigInt(records[i - 1]!.token)) backwards.push(`${records[i - 1]!.token} then ${r.token}`);
    const owner = pidOf.get(r.token);
    if (owner !== undefined && owner !== r.pid) shared.push(`token ${r.token}: pids ${owner} and ${r.pid}`);
    pidOf.set(r.token, r.pid);
  }
  const { rows: refusedRows } = await ctx.admin.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${q}.mp_refusals`);
  const bound = p.ttlMs + Math.floor(p.ttlMs / 3);
  const worst = takeovers.length ? Math.max(...takeovers.map((t) => t.ms)) : null;
  return {
    id: '5-daemon-failover',
    title: 'a daemon’s holder killed or paused; a new holder takes over; the old one wakes',
    faults: injector.counts(),
    jobs: pidOf.size,
    unit: 'terms',
    lost: 0,
    duplicates: { explained: 0, unexplained: backwards.length + shared.length },
    maxRecoveryMs: worst,
    recovery: `longest time from the fault to the new holder’s first write (bound: ttl + retry = ${bound} ms from the last renewal)`,
    invariants: [
      { name: 'fencing tokens never go back in the record (no two terms act interleaved)', holds: backwards.length === 0, detail: backwards.slice(0, 5).join('; ') },
      { name: 'every term acted from one process only', holds: shared.length === 0, detail: shared.slice(0, 5).join('; ') },
      { name: 'every fault on the holder was followed by a new term', holds: takeovers.length === p.rounds, detail: takeovers.length === p.rounds ? '' : `${takeovers.length} takeovers in ${p.rounds} rounds` },
    ],
    figures: {
      'takeover after a kill (ms)': takeovers
        .filter((t) => t.fault === 'kill')
        .map((t) => t.ms)
        .join(', '),
      'takeover after a pause (ms)': takeovers
        .filter((t) => t.fault === 'pause')
        .map((t) => t.ms)
        .join(', '),
      'takeovers within ttl + retry': `${takeovers.filter((t) => t.ms <= bound).length} of ${takeovers.length}`,
      'woken holders whose next write was refused': `${wokenRefused.length} of ${takeovers.filter((t) => t.fault === 'pause').length} (the others stepped down before writing)`,
      'refused writes recorded': refusedRows[0]!.n,
      'records written': records.length,
    },
    durationMs: 0,
  };
}

/** Scenario 5: daemon failover under kills and pauses, checked by fencing tokens. */
export const daemonFailover: Scenario<DaemonFailoverParams> = {
  id: '5-daemon-failover',
  title: 'a daemon’s holder killed or paused; a new holder takes over; the old one wakes',
  restartsServer: false,
  sizes: { full, short },
  run,
};
