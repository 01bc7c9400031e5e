import type pg from 'pg';

/** A due job waiting to be claimed, as one sample saw it. */
export interface DueJob {
  id: string;
  queue: string;
  attempt: number;
  runAt: number;
  createdAt: number;
}

/** A running job under a limit, as one sample saw it: its lease (token) and the limit keys it holds. */
export interface LimitedLease {
  id: string;
  token: string;
  keys: string[];
}

/** A running job whose lease has expired, as one sample saw it. */
export interface OverdueJob {
  id: string;
  kind: string;
  owner: string | null;
  /** How long ago its lease expired (database clock). */
  expiredMs: number;
  /** The job has a dedupe key that a pending job of its kind holds now. */
  keyTaken: boolean;
}

/** One look at the jobs table during a run, on the database clock. */
export interface Sample {
  at: number;
  due: DueJob[];
  overdue: OverdueJob[];
  /** (kind, key) pairs with more than one pending job: the unique index makes this impossible. */
  duplicateKeys: { kind: string; key: string; n: number }[];
  /** Running jobs under a limit: the leases the limits count (absent in observations kept before flow control). */
  limited?: LimitedLease[];
}

/**
 * Samples the jobs table every `everyMs` while a run lasts: which due jobs wait unclaimed, which
 * running jobs hold an expired lease, whether a dedupe key has two pending jobs, and which leases
 * the fleet-wide limits count. The checker judges liveness, rescue and limits from these samples.
 * One small statement per sample (one snapshot: the counts of a sample are consistent).
 */
export class Sampler {
  readonly samples: Sample[] = [];
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  private readonly text: string;

  constructor(
    private readonly sql: pg.Pool,
    schema: string,
    private readonly everyMs = 250,
  ) {
    const q = `"${schema}"`;
    const ms = (col: string) => `(extract(epoch FROM ${col}) * 1000)::float8`;
    this.text = `
      SELECT ${ms('now()')} AS at,
        coalesce((SELECT json_agg(json_build_object('id', id::text, 'queue', queue, 'attempt', attempt,
                   'runAt', ${ms('run_at')}, 'createdAt', ${ms('created_at')}))
                  FROM ${q}.jobs_all WHERE state = 'available' AND run_at <= now() AND kind LIKE 'model-%'), '[]') AS due,
        coalesce((SELECT json_agg(json_build_object('id', j.id::text, 'kind', j.kind, 'owner', j.lease_owner,
                   'expiredMs', ${ms('now() - j.lease_expires_at')},
                   'keyTaken', EXISTS (SELECT 1 FROM ${q}.jobs_all p WHERE p.state = 'available' AND p.kind = j.kind AND p.dedupe_key = j.dedupe_key)))
                  FROM ${q}.jobs_all j WHERE j.state = 'running' AND j.lease_expires_at < now()), '[]') AS overdue,
        coalesce((SELECT json_agg(json_build_object('kind', kind, 'key', dedupe_key, 'n', n))
                  FROM (SELECT kind, dedupe_key, count(*)::int AS n FROM ${q}.jobs_all
                        WHERE state = 'available' AND dedupe_key IS NOT NULL GROUP BY 1, 2 HAVING count(*) > 1) d), '[]') AS "duplicateKeys",
        coalesce((SELECT json_agg(json_build_object('id', id::text, 'token', lease_token::text, 'keys', limit_keys))
                  FROM ${q}.jobs WHERE state = 'running' AND limit_keys IS NOT NULL AND kind LIKE 'model-%'), '[]') AS limited`;
  }

  start(): void {
    const tick = async () => {
      try {
        const { rows } = await this.sql.query<Sample>(this.text);
        if (rows[0]) this.samples.push(rows[0]);
      } catch {
        // A missed sample only widens the gap the checker sees; it never invents a wait.
      }
      if (!this.stopped) {
        this.timer = setTimeout(() => {
          this.running = tick();
        }, this.everyMs);
      }
    };
    this.running = tick();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }
}
