import { run, type Executor } from './executor.js';
import { UNSTARTED_RESCUES, type ClaimedRow } from './jobs-run.js';
import type { StatementSet } from './statements.js';

/** A limit as stored in the limits table (written by the workers that run it). */
export interface LimitRow {
  name: string;
  type: 'concurrency' | 'rate';
  max: number;
  /** The window of a rate limit, in ms; null for a concurrency limit. */
  perMs: number | null;
  /** Whether it holds per key (its job's keys are `name#key`). */
  keyed: boolean;
}

/** What the limited claim takes, beyond the plain claim's parameters. */
export interface LimitedClaimParams {
  queue: string;
  kinds: readonly string[];
  limit: number;
  owner: string;
  leaseMs: number;
  /** Every limit this claim may take a slot of (its kinds' and its queue's), by name. */
  names: readonly string[];
  /** Kind → the keys of its jobs that carry none (enqueued by SQL or by code that does not know the limits). */
  defaults: Readonly<Record<string, readonly string[]>>;
  /** The queue's own limits, held by every job claimed from it. */
  queueKeys: readonly string[];
  /**
   * Claim in room mode (claim_limited, migration 0011): beside other room-mode claimers, for
   * limits far from hit; the claim says when to stop (and claims nothing then) or start again.
   */
  room?: boolean;
}

/** What a limited claim did: the claimed rows, and what the limits held back. */
export interface LimitedClaim {
  rows: ClaimedRow[];
  /** Due jobs the claim passed over because one of their limits was full (among those it read; at most about 1,000). */
  limited: number;
  /** When the first full rate window opens, in ms from the claim; undefined when no rate limit held a job back. */
  wakeInMs: number | undefined;
  /**
   * The mode of the next claim, when it changes: `false` after a room-mode claim that could not
   * prove room (it claimed nothing: claim again at once, exclusively), `true` once an exclusive
   * claim found the limits far from hit. Undefined: keep the mode.
   */
  room: boolean | undefined;
}

/** A limit with what holds it now, for operators (`nightshift limits`, the dashboard). */
export interface LimitRecord {
  name: string;
  type: 'concurrency' | 'rate';
  max: number;
  perMs: number | null;
  keyed: boolean;
  /** Running jobs holding it (concurrency), or starts in the current window (rate), over all keys. */
  inUse: number;
  /** Keys at their limit right now. */
  fullKeys: number;
  /** Due jobs that carry it and wait (at most 10,000 counted). */
  waiting: number;
  /** The busiest keys (up to 10): key ('' for a limit without keys) and slots in use. */
  top: { key: string; inUse: number }[];
  updatedAt: Date;
}

/** One limit of one job, as `jobs show` reports it. */
export interface JobLimitState {
  /** The limit's name. */
  limit: string;
  type: 'concurrency' | 'rate';
  /** The job's key of it ('' for a limit without keys). */
  key: string;
  max: number;
  perMs: number | null;
  /** Slots of this key in use now: running jobs, or starts in the window. */
  inUse: number;
  /** Whether the key is at its limit (a due job of it waits for a slot or the window). */
  full: boolean;
}

type ClaimRowOut = Omit<ClaimedRow, 'id' | 'state'> & { id: string | null; state: ClaimedRow['state'] | null; wake_in_ms: number | null; limited: number | null; room: boolean | null; unstarted: number | null };

const KEYPART = (col: string) => `CASE WHEN strpos(${col}, '#') = 0 THEN '' ELSE substr(${col}, strpos(${col}, '#') + 1) END`;
const NAMEPART = (col: string) => `split_part(${col}, '#', 1)`;

/** The statements of flow control: the limited claim, the limits' registration and what operators read. */
export function limitStatements(set: StatementSet) {
  return {
    // The claim of a queue with limited kinds (migration 0011 says how claim_limited enforces
    // them); queues without limits keep the plain job_claim. start_first as in the plain claim
    // (SUSPECT): the function counts a claimed job's rescues without a start, the bound is here.
    claim: set.named<
      ClaimRowOut,
      [queue: string, kinds: readonly string[], limit: number, owner: string, leaseMs: number, startNow: number, names: readonly string[], defaults: string, queueKeys: readonly string[], room: boolean]
    >(
      'job_claim_limited',
      (s) =>
        `SELECT c.*, coalesce(c.unstarted >= ${UNSTARTED_RESCUES}, false) AS start_first
FROM ${s}.claim_limited($1, $2::text[], $3::int, $4, $5::float8, $6::int, $7::text[], $8::jsonb, $9::text[], $10::bool) c`,
    ),
    register: set.plain<never, [names: string[], types: string[], maxes: number[], pers: (number | null)[], keyed: boolean[]]>(
      (s) => `
INSERT INTO ${s}.limits (name, type, max, per_ms, keyed, updated_at)
SELECT *, now() FROM unnest($1::text[], $2::text[], $3::int[], $4::bigint[], $5::bool[])
ON CONFLICT (name) DO UPDATE SET type = EXCLUDED.type, max = EXCLUDED.max, per_ms = EXCLUDED.per_ms, keyed = EXCLUDED.keyed, updated_at = now()
WHERE (${s}.limits.type, ${s}.limits.max, ${s}.limits.per_ms, ${s}.limits.keyed) IS DISTINCT FROM (EXCLUDED.type, EXCLUDED.max, EXCLUDED.per_ms, EXCLUDED.keyed)`,
    ),
    // Slots in use per key: running jobs for concurrency limits, starts in the window for rate
    // limits. Read by operators only; the claim counts the same way under its locks.
    usage: set.plain<{ name: string; key: string; in_use: number }, [names: string[] | null]>(
      (s) => `
SELECT ${NAMEPART('e.k')} AS name, ${KEYPART('e.k')} AS key, count(*)::int AS in_use
FROM ${s}.jobs j, unnest(j.limit_keys) e(k), ${s}.limits l
WHERE j.lease_expires_at IS NOT NULL AND j.state = 'running' AND j.limit_keys IS NOT NULL
  AND l.name = ${NAMEPART('e.k')} AND l.type = 'concurrency' AND ($1::text[] IS NULL OR l.name = ANY ($1))
GROUP BY 1, 2
UNION ALL
SELECT w.name, w.key, (SELECT coalesce(sum(x.c), 0)::int FROM unnest(w.starts, w.counts) x(s, c) WHERE x.s > now() - l.per_ms * interval '1 millisecond')
FROM ${s}.limit_windows w JOIN ${s}.limits l ON l.name = w.name AND l.type = 'rate'
WHERE ($1::text[] IS NULL OR w.name = ANY ($1))`,
    ),
    list: set.plain<{ name: string; type: 'concurrency' | 'rate'; max: number; per_ms: string | null; keyed: boolean; updated_at: Date }, []>(
      (s) => `SELECT name, type, max, per_ms::text, keyed, updated_at FROM ${s}.limits ORDER BY name`,
    ),
    // Due jobs waiting that carry each limit (bounded: a scan of available jobs).
    waiting: set.plain<{ name: string; n: number }, []>(
      (s) => `
SELECT ${NAMEPART('e.k')} AS name, count(*)::int AS n
FROM (SELECT limit_keys FROM ${s}.jobs WHERE state = 'available' AND run_at <= now() AND limit_keys IS NOT NULL LIMIT 10000) j,
     unnest(j.limit_keys) e(k)
GROUP BY 1`,
    ),
    jobKeys: set.plain<{ limit_keys: string[] | null; kind: string; queue: string }, [id: string]>((s) => `SELECT limit_keys, kind, queue FROM ${s}.jobs WHERE id = $1::bigint`),
  };
}
export type LimitStatements = ReturnType<typeof limitStatements>;

/** Flow control's statements bound to the schema's pool. */
export class LimitQueries {
  readonly statements: LimitStatements;

  constructor(
    private readonly db: Executor,
    set: StatementSet,
  ) {
    this.statements = limitStatements(set);
  }

  /**
   * Claims up to `limit` jobs as the plain claim does, within the fleet-wide limits named in
   * `names`: exact under concurrent claimers (see claim_limited in migration 0011).
   */
  async claim(p: LimitedClaimParams): Promise<LimitedClaim> {
    // p_start_now 0: the claim records no start; the worker records each (see jobs-run.ts, claim).
    const out = await run(this.db, this.statements.claim, [p.queue, p.kinds, p.limit, p.owner, p.leaseMs, 0, p.names, JSON.stringify(p.defaults), p.queueKeys, p.room ?? false]);
    const rows: ClaimedRow[] = [];
    let limited = 0;
    let wakeInMs: number | undefined;
    let room: boolean | undefined;
    for (const r of out) {
      if (r.id === null) {
        limited = r.limited ?? 0;
        wakeInMs = r.wake_in_ms ?? undefined;
        room = r.room ?? undefined;
      } else {
        // (the row keeps its null summary fields: a copy without them cost a rest spread per job)
        rows.push(r as ClaimedRow);
      }
    }
    return { rows, limited, wakeInMs, room };
  }

  /** Records the limits a worker runs with (the last writer wins: every process of a fleet should declare the same). */
  async register(limits: readonly LimitRow[]): Promise<void> {
    if (limits.length === 0) return;
    await run(this.db, this.statements.register, [limits.map((l) => l.name), limits.map((l) => l.type), limits.map((l) => l.max), limits.map((l) => l.perMs), limits.map((l) => l.keyed)]);
  }

  /** Every registered limit with its use now: slots in use, full keys, waiting jobs, the busiest keys. */
  async list(): Promise<LimitRecord[]> {
    const [limits, usage, waiting] = await Promise.all([run(this.db, this.statements.list, []), run(this.db, this.statements.usage, [null]), run(this.db, this.statements.waiting, [])]);
    const waits = new Map(waiting.map((w) => [w.name, w.n]));
    return limits.map((l) => {
      const mine = usage.filter((u) => u.name === l.name && u.in_use > 0).sort((a, b) => b.in_use - a.in_use);
      return {
        name: l.name,
        type: l.type,
        max: l.max,
        perMs: l.per_ms === null ? null : Number(l.per_ms),
        keyed: l.keyed,
        inUse: mine.reduce((n, u) => n + u.in_use, 0),
        fullKeys: mine.filter((u) => u.in_use >= l.max).length,
        waiting: waits.get(l.name) ?? 0,
        top: mine.slice(0, 10).map((u) => ({ key: u.key, inUse: u.in_use })),
        updatedAt: l.updated_at,
      };
    });
  }

  /** The limits a job holds or waits for, each with its key's use now; [] for a job under no limit (or unknown). */
  async forJob(id: string): Promise<JobLimitState[]> {
    const [job] = await run(this.db, this.statements.jobKeys, [id]);
    if (!job) return [];
    const limits = await run(this.db, this.statements.list, []);
    // A queue's limits are held by every job of it, from the claim on (they are not stamped at enqueue).
    const own = [`queue:${job.queue}:c`, `queue:${job.queue}:r`].filter((n) => limits.some((l) => l.name === n));
    const keys = [...new Set([...(job.limit_keys ?? []), ...own])];
    if (keys.length === 0) return [];
    const names = [...new Set(keys.map((k) => k.split('#')[0]!))];
    const usage = await run(this.db, this.statements.usage, [names]);
    const out: JobLimitState[] = [];
    for (const k of keys) {
      const at = k.indexOf('#');
      const name = at < 0 ? k : k.slice(0, at);
      const key = at < 0 ? '' : k.slice(at + 1);
      const l = limits.find((x) => x.name === name);
      if (!l) continue;
      const inUse = usage.find((u) => u.name === name && u.key === key)?.in_use ?? 0;
      out.push({ limit: name, type: l.type, key, max: l.max, perMs: l.per_ms === null ? null : Number(l.per_ms), inUse, full: inUse >= l.max });
    }
    return out;
  }
}
