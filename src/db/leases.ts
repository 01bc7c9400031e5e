import { run, runCount, type Executor } from './executor.js';
import type { StatementSet } from './statements.js';

/** A lease as stored: who holds a name, under which fencing token, until when (database clock). */
interface LeaseRow {
  name: string;
  holder: string;
  /** The fencing token of the current (or last) term, as a decimal string (bigint). */
  token: string;
  expires_at: Date;
  acquired_at: Date;
  renewed_at: Date;
  /** True when `expires_at` has passed by the database clock: nobody holds the name now. */
  expired: boolean;
}

/** A lease as listings show it (`nightshift daemons`, the dashboard). */
export interface LeaseInfo {
  /** The lease's name; daemons are elected under `daemon:<name>`. */
  name: string;
  /** The current holder, or the last one when `expired`. */
  holder: string;
  /** The fencing token of the current (or last) term. */
  token: string;
  /** When the term ends unless renewed (database clock). */
  expiresAt: Date;
  /** When the current (or last) term began. */
  acquiredAt: Date;
  /** When the holder last renewed. */
  renewedAt: Date;
  /** True when nobody holds the lease now: its holder released it, died, or was cut off. */
  expired: boolean;
}

/** The term a successful acquisition started. */
export interface AcquiredLease {
  token: string;
  expires_at: Date;
}

/**
 * Lease statements of one schema. Every change is one statement and every one after an
 * acquisition names the token, so a holder whose term ended (expired, taken over) changes nothing.
 */
export function leaseStatements(set: StatementSet) {
  return {
    // Acquire in one atomic statement: insert the row, or take it over when it has expired — or
    // when it still carries this elector's own last token (its renewal was lost in flight, it
    // stepped down, and may start a new term at once). Either way the term gets a fresh token from
    // the sequence, so writes fenced by any earlier token are refused from now on.
    // ON CONFLICT DO UPDATE locks the existing row and evaluates WHERE on its newest version: two
    // contenders never both win, and a takeover waits for a fenced transaction that share-locks it.
    acquire: set.named<AcquiredLease, [name: string, holder: string, ttlMs: number, lastToken: string | null]>(
      'lease_acquire',
      (s) => `
INSERT INTO ${s}.leases AS l (name, holder, token, expires_at, acquired_at, renewed_at)
VALUES ($1, $2, nextval('${s}.leader_token_seq'), now() + $3::float8 * interval '1 millisecond', now(), now())
ON CONFLICT (name) DO UPDATE SET
  holder = EXCLUDED.holder, token = EXCLUDED.token, expires_at = EXCLUDED.expires_at,
  acquired_at = EXCLUDED.acquired_at, renewed_at = EXCLUDED.renewed_at
WHERE l.expires_at <= now() OR (l.holder = EXCLUDED.holder AND l.token = $4::bigint)
RETURNING l.token::text, l.expires_at`,
    ),
    // Renew only the term we hold and only while it is unexpired: a lease that expired is never
    // revived, even if nobody took it yet (a new term with a new token is taken instead).
    renew: set.named<{ expires_at: Date }, [name: string, token: string, ttlMs: number]>(
      'lease_renew',
      (s) => `
UPDATE ${s}.leases SET expires_at = now() + $3::float8 * interval '1 millisecond', renewed_at = now()
WHERE name = $1 AND token = $2::bigint AND expires_at > now()
RETURNING expires_at`,
    ),
    // Release on shutdown: expire the lease now, so the next contender takes it at once. Guarded
    // by the token, so a holder that was already replaced cannot cut its successor's term short.
    release: set.plain<never, [name: string, token: string]>((s) => `UPDATE ${s}.leases SET expires_at = now() WHERE name = $1 AND token = $2::bigint AND expires_at > now()`),
    // Fences the caller's transaction (see assert_lease in 0002_leadership.sql).
    assert: set.named<unknown, [name: string, token: string]>('lease_assert', (s) => `SELECT ${s}.assert_lease($1, $2::bigint)`),
    check: set.named<{ ok: boolean }, [name: string, token: string]>('lease_check', (s) => `SELECT ${s}.lease_check($1, $2::bigint) AS ok`),
    list: set.plain<LeaseRow, [prefix: string | null]>(
      (s) => `
SELECT name, holder, token::text, expires_at, acquired_at, renewed_at, expires_at <= now() AS expired
FROM ${s}.leases
WHERE $1::text IS NULL OR starts_with(name, $1)
ORDER BY name`,
    ),
  };
}
export type LeaseStatements = ReturnType<typeof leaseStatements>;

/**
 * The lease statements bound to the schema's pool. `db` runs a statement on another executor (a
 * test's second connection); the fences take the caller's transaction as `tx`.
 */
export class LeaseQueries {
  private readonly st: LeaseStatements;

  constructor(
    private readonly pool: Executor,
    set: StatementSet,
  ) {
    this.st = leaseStatements(set);
  }

  /** Tries to acquire `name` for `holder` for `ttlMs`; returns the new term, or undefined when another holder has it. */
  async acquire(p: { name: string; holder: string; ttlMs: number; lastToken?: string; db?: Executor }): Promise<AcquiredLease | undefined> {
    const [row] = await run(p.db ?? this.pool, this.st.acquire, [p.name, p.holder, p.ttlMs, p.lastToken ?? null]);
    return row;
  }

  /** Extends the term `token` of `name` by `ttlMs` from now; false when the term is over (expired or taken). */
  async renew(p: { name: string; token: string; ttlMs: number }): Promise<boolean> {
    const rows = await run(this.pool, this.st.renew, [p.name, p.token, p.ttlMs]);
    return rows.length > 0;
  }

  /** Ends the term `token` of `name` now; false when it had already ended. */
  async release(p: { name: string; token: string; db?: Executor }): Promise<boolean> {
    return (await runCount(p.db ?? this.pool, this.st.release, [p.name, p.token])) > 0;
  }

  /**
   * Fences the transaction `tx` by the term `token` of `name`: throws FencedError (NS_FENCED) unless
   * it is the current unexpired term, and otherwise keeps any takeover from committing before `tx` ends.
   */
  async assert(p: { tx: Executor; name: string; token: string }): Promise<void> {
    await run(p.tx, this.st.assert, [p.name, p.token]);
  }

  /** Whether `token` is the current unexpired term of `name` (share-locks the row within a transaction `db`). */
  async check(p: { name: string; token: string; db?: Executor }): Promise<boolean> {
    const [row] = await run(p.db ?? this.pool, this.st.check, [p.name, p.token]);
    return row?.ok ?? false;
  }

  /** The leases of the schema, ordered by name, with whether each has expired by the database clock; with `prefix`, only names starting with it. */
  async list(p: { prefix?: string } = {}): Promise<LeaseInfo[]> {
    const rows = await run(this.pool, this.st.list, [p.prefix ?? null]);
    return rows.map((r) => ({
      name: r.name,
      holder: r.holder,
      token: r.token,
      expiresAt: r.expires_at,
      acquiredAt: r.acquired_at,
      renewedAt: r.renewed_at,
      expired: r.expired,
    }));
  }
}
