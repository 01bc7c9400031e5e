import type pg from 'pg';

/** One injected fault, as the injector logged it (times are this host's wall clock, in ms). */
export interface FaultRecord {
  kind: FaultKind;
  /** The process the fault hit (the owner of a terminated backend), or null for the server. */
  targetPid: number | null;
  /** The terminated backend's pid, for backend terminations. */
  backendPid: number | null;
  startedAt: number;
  endedAt: number;
  detail: string;
}

/** What the injector can do. `clock-skew` is a standing condition, never an explanation. */
export type FaultKind = 'sigkill' | 'sigstop' | 'sigterm' | 'backend-terminated' | 'listener-cut' | 'pg-restart' | 'pg-failover' | 'redis-restart' | 'clock-skew' | 'rollback';

/**
 * The record of a scenario, in the scenario's schema next to nightshift's tables: `effects` (one
 * row per execution of a job's handler, written by the handler itself in the same database, with
 * the database's clock; a handler may also note what it was told to do and, when it returns, its
 * end and outcome — the model-based test does), `refusals` (writes the runtime saw refused by a fencing token) and
 * `fault_log` (every fault injected, written once the run is over). The checker joins them.
 */
export class Recorder {
  constructor(
    readonly sql: pg.Pool,
    readonly schema: string,
  ) {}

  /** The quoted schema, for SQL. */
  get q(): string {
    return `"${this.schema}"`;
  }

  /** Creates the record's tables (after nightshift's migration of the schema). */
  async install(): Promise<void> {
    const q = this.q;
    await this.sql.query(`
      CREATE TABLE IF NOT EXISTS ${q}.effects (
        id bigserial PRIMARY KEY, job_id bigint NOT NULL, kind text NOT NULL, attempt int NOT NULL,
        pid int NOT NULL, token bigint NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp(),
        note text, ended_at timestamptz, outcome text);
      CREATE INDEX IF NOT EXISTS effects_job ON ${q}.effects (job_id, token);
      CREATE TABLE IF NOT EXISTS ${q}.refusals (
        id bigserial PRIMARY KEY, job_id bigint NOT NULL, token bigint NOT NULL, pid int NOT NULL,
        operation text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp());
      CREATE TABLE IF NOT EXISTS ${q}.fault_log (
        id serial PRIMARY KEY, kind text NOT NULL, target_pid int, backend_pid int,
        started_at timestamptz NOT NULL, ended_at timestamptz NOT NULL, detail text NOT NULL)`);
  }

  /** Writes the fault log (after the run: during it the server may be down). */
  async writeFaults(faults: readonly FaultRecord[]): Promise<void> {
    if (faults.length === 0) return;
    await this.sql.query(
      `INSERT INTO ${this.q}.fault_log (kind, target_pid, backend_pid, started_at, ended_at, detail)
       SELECT k, t, b, to_timestamp(s / 1000.0), to_timestamp(e / 1000.0), d
       FROM unnest($1::text[], $2::int[], $3::int[], $4::float8[], $5::float8[], $6::text[]) AS f(k, t, b, s, e, d)`,
      [faults.map((f) => f.kind), faults.map((f) => f.targetPid), faults.map((f) => f.backendPid), faults.map((f) => f.startedAt), faults.map((f) => f.endedAt), faults.map((f) => f.detail)],
    );
  }

  /** Executions recorded so far (optionally of one kind or one process). */
  async effectCount(where: { kind?: string; pid?: number; jobId?: string } = {}): Promise<number> {
    const { rows } = await this.sql.query<{ n: number }>(
      `SELECT count(*)::int AS n FROM ${this.q}.effects
       WHERE ($1::text IS NULL OR kind = $1) AND ($2::int IS NULL OR pid = $2) AND ($3::bigint IS NULL OR job_id = $3)`,
      [where.kind ?? null, where.pid ?? null, where.jobId ?? null],
    );
    return rows[0]!.n;
  }

  /** Jobs of `kind` by state. */
  async states(kind: string): Promise<Record<string, number>> {
    const { rows } = await this.sql.query<{ state: string; n: number }>(`SELECT state::text, count(*)::int AS n FROM ${this.q}.jobs_all WHERE kind = $1 GROUP BY state`, [kind]);
    return Object.fromEntries(rows.map((r) => [r.state, r.n]));
  }

  /** Jobs of `kind` still waiting or running (a retry waiting for its back-off counts). */
  async unfinished(kind: string): Promise<number> {
    const { rows } = await this.sql.query<{ n: number }>(`SELECT count(*)::int AS n FROM ${this.q}.jobs_all WHERE kind = $1 AND state IN ('available', 'running')`, [kind]);
    return rows[0]!.n;
  }
}
