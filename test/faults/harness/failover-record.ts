import type pg from 'pg';

/** A handler start, as the worker told it on stdout (NS_ECHO_RUNS) before writing anything. */
export interface RunLine {
  jobId: string;
  token: string;
  kind: string;
  /** The tick a schedule job belongs to (`-` for others). */
  tick: string;
  at: number;
  pid: number;
}

/** What the fleet told on stdout: it survives the database losing its own record. */
export interface FleetRecord {
  runs: RunLine[];
  /** The first acknowledged completion of each job (ms). */
  completed: Map<string, number>;
  /** Leader terms: lease, token, when, by whom. */
  elected: { lease: string; token: string; at: number; pid: number }[];
}

/** Parses the `ran`, `completed` and `elected` lines of each process's output. */
export function parseFleetOutput(outputs: readonly { pid: number; output: string }[]): FleetRecord {
  const rec: FleetRecord = { runs: [], completed: new Map(), elected: [] };
  for (const { pid, output } of outputs) {
    for (const line of output.split('\n')) {
      const f = line.trim().split(' ');
      if (f[0] === 'ran' && f.length === 6) rec.runs.push({ jobId: f[1]!, token: f[2]!, kind: f[3]!, tick: f[4]!, at: Number(f[5]), pid });
      else if (f[0] === 'completed' && f.length === 3) {
        const at = Number(f[2]);
        rec.completed.set(f[1]!, Math.min(at, rec.completed.get(f[1]!) ?? at));
      } else if (f[0] === 'elected' && f.length === 4) rec.elected.push({ lease: f[1]!, token: f[2]!, at: Number(f[3]), pid });
    }
  }
  return rec;
}

/** What one failover cost, per unit of work, as counted from the fleet's record and the promoted server. */
export interface FailoverLosses {
  jobs: number;
  /** At-least-once jobs not completed at the end (lost). */
  atLeastOnceLost: number;
  /** At-least-once jobs that ran more than once (their handler started twice or more). */
  atLeastOnceRerun: number;
  /** …of which every run but the last started before `failoverEndedAt` (explained by the failover). */
  rerunExplained: number;
  /** Jobs whose completion was acknowledged before the primary died and that ran again after. */
  ackedCompletionsLost: number;
  /** At-most-once jobs whose handler started twice or more. */
  atMostOnceRanTwice: number;
  /** At-most-once jobs neither completed, abandoned nor discarded at the end. */
  atMostOnceStuck: number;
  atMostOnceStates: Record<string, number>;
  /** Schedule slots whose tick became two jobs (two job ids ran for one tick time). */
  ticksTwice: number;
  ticksRun: number;
  /** A lease token handed out for two terms, or a later term with a smaller token. */
  leaderTokenProblems: string[];
  /** Job lease tokens seen on two handler starts (a claim the promoted server forgot, its token handed out again). */
  jobTokensReused: number;
}

/** Counts what was lost or doubled, given the fleet's record and the promoted server's tables. */
export async function failoverLosses(sql: pg.Pool, schema: string, rec: FleetRecord, failoverEndedAt: number, killAt: number): Promise<FailoverLosses> {
  const q = `"${schema}"`;
  const { rows: jobs } = await sql.query<{ id: string; kind: string; state: string }>(`SELECT id::text, kind, state::text FROM ${q}.jobs_all`);
  const byJob = new Map<string, RunLine[]>();
  for (const r of rec.runs) byJob.set(r.jobId, [...(byJob.get(r.jobId) ?? []), r]);
  const runsOf = (id: string) => (byJob.get(id) ?? []).sort((a, b) => a.at - b.at);

  const alo = jobs.filter((j) => j.kind === 'effect');
  const amo = jobs.filter((j) => j.kind === 'effect-amo');
  const rerun = alo.filter((j) => runsOf(j.id).length > 1);
  const explained = rerun.filter((j) =>
    runsOf(j.id)
      .slice(0, -1)
      .every((r) => r.at <= failoverEndedAt),
  );
  const ackedLost = [...rec.completed].filter(([id, at]) => at < killAt && runsOf(id).some((r) => r.at > at));
  const amoStates: Record<string, number> = {};
  for (const j of amo) amoStates[j.state] = (amoStates[j.state] ?? 0) + 1;

  const ticks = new Map<string, Set<string>>();
  for (const r of rec.runs) if (r.kind === 'tick-effect') ticks.set(r.tick, (ticks.get(r.tick) ?? new Set()).add(r.jobId));

  const leaderProblems: string[] = [];
  const byLease = new Map<string, { token: string; at: number; pid: number }[]>();
  for (const e of rec.elected) byLease.set(e.lease, [...(byLease.get(e.lease) ?? []), e]);
  for (const [lease, terms] of byLease) {
    const sorted = [...terms].sort((a, b) => a.at - b.at);
    const seen = new Set<string>();
    for (let i = 0; i < sorted.length; i++) {
      const t = sorted[i]!;
      if (seen.has(t.token)) leaderProblems.push(`${lease}: token ${t.token} handed out twice`);
      seen.add(t.token);
      if (i > 0 && BigInt(t.token) < BigInt(sorted[i - 1]!.token)) leaderProblems.push(`${lease}: token ${t.token} after ${sorted[i - 1]!.token}`);
    }
  }
  // Every claim draws a new token: a token on two handler starts is a claim the promoted server forgot and handed out again.
  const runsByToken = new Map<string, number>();
  for (const r of rec.runs) runsByToken.set(r.token, (runsByToken.get(r.token) ?? 0) + 1);
  const tokensReused = [...runsByToken.values()].filter((n) => n > 1).length;

  return {
    jobs: alo.length + amo.length,
    atLeastOnceLost: alo.filter((j) => j.state !== 'completed').length,
    atLeastOnceRerun: rerun.length,
    rerunExplained: explained.length,
    ackedCompletionsLost: ackedLost.length,
    atMostOnceRanTwice: amo.filter((j) => runsOf(j.id).length > 1).length,
    atMostOnceStuck: amo.filter((j) => !['completed', 'abandoned', 'discarded'].includes(j.state)).length,
    atMostOnceStates: amoStates,
    ticksTwice: [...ticks.values()].filter((ids) => ids.size > 1).length,
    ticksRun: ticks.size,
    leaderTokenProblems: leaderProblems,
    jobTokensReused: tokensReused,
  };
}
