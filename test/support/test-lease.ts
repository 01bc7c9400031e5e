import pg from 'pg';
import type { LeaderLease, LeaderTerm } from '../../src/leadership/leader-lease.js';
import { trackResource } from '../../src/lifecycle/resources.js';

/**
 * A minimal {@link LeaderLease} for tests, on a PostgreSQL row with a fencing token: enough for
 * real processes to elect one holder and fail over when it dies. It stands in for the runtime's
 * elector wherever a test needs leadership without depending on it.
 */
export class TestLease implements LeaderLease {
  private current: { term: LeaderTerm; controller: AbortController; expiresAt: number } | undefined;
  private listeners: ((term: LeaderTerm | undefined) => void)[] = [];
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private tick: Promise<void> | undefined;
  private release: (() => void) | undefined;

  constructor(
    readonly name: string,
    private readonly pool: pg.Pool,
    private readonly table: string,
    private readonly holder: string,
    private readonly ttlMs = 1_000,
  ) {}

  /** Creates the lease table (once per schema). */
  static async createTable(pool: pg.Pool, table: string): Promise<void> {
    await pool.query(`CREATE TABLE IF NOT EXISTS ${table} (name text PRIMARY KEY, holder text NOT NULL, token bigint NOT NULL, expires_at timestamptz NOT NULL)`);
  }

  get term(): LeaderTerm | undefined {
    return this.current?.term;
  }

  onChange(listener: (term: LeaderTerm | undefined) => void): () => void {
    this.listeners.push(listener);
    return () => {
      this.listeners = this.listeners.filter((l) => l !== listener);
    };
  }

  async start(): Promise<void> {
    if (this.running) return;
    this.running = true;
    this.release = trackResource('lease', `test ${this.name}`);
    await this.campaign();
  }

  async stop(): Promise<void> {
    if (!this.running) return;
    this.running = false;
    clearTimeout(this.timer);
    await this.tick;
    if (this.current) {
      await this.pool.query(`DELETE FROM ${this.table} WHERE name = $1 AND holder = $2`, [this.name, this.holder]).catch(() => undefined);
      this.depose();
    }
    this.release?.();
  }

  private async campaign(): Promise<void> {
    this.tick = this.attempt();
    await this.tick;
    if (this.running) this.timer = setTimeout(() => void this.campaign(), this.ttlMs / 4);
  }

  private async attempt(): Promise<void> {
    try {
      const { rows } = await this.pool.query<{ token: string }>(
        `INSERT INTO ${this.table} (name, holder, token, expires_at) VALUES ($1, $2, 1, now() + $3 * interval '1 millisecond')
         ON CONFLICT (name) DO UPDATE
           SET holder = excluded.holder,
               token = ${this.table}.token + CASE WHEN ${this.table}.holder = excluded.holder THEN 0 ELSE 1 END,
               expires_at = excluded.expires_at
         WHERE ${this.table}.holder = excluded.holder OR ${this.table}.expires_at < now()
         RETURNING token::text`,
        [this.name, this.holder, this.ttlMs],
      );
      const token = rows[0]?.token;
      if (!token) return this.depose();
      if (this.current?.term.token === token) {
        this.current.expiresAt = Date.now() + this.ttlMs;
        return;
      }
      this.depose();
      const controller = new AbortController();
      this.current = { term: { token, signal: controller.signal }, controller, expiresAt: Date.now() + this.ttlMs };
      for (const l of this.listeners) l(this.current.term);
    } catch {
      // Renewal failed: the term ends once the lease could have expired.
      if (this.current && Date.now() > this.current.expiresAt) this.depose();
    }
  }

  private depose(): void {
    if (!this.current) return;
    const { controller } = this.current;
    this.current = undefined;
    controller.abort(new Error(`leadership of ${this.name} lost`));
    for (const l of this.listeners) l(undefined);
  }
}
