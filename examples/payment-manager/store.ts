// The payment manager's own tables and the statements on them (seed 002's pm.payment_intent,
// pm.psp_tx_map, the settlement records). They live in the schema named by NS_SCHEMA, beside
// nightshift's tables, so each test has its own; a real deployment would give them a schema of their own.
import type { Executor } from '../../src/index.js';

/** The states of a PSP row (seed 002 §3). */
export const PSP_STATES = ['NEW', 'QUERY_PENDING', 'QUERIED', 'CONFIRM_PENDING', 'INQUIRING', 'CONFIRMED', 'FAILED', 'MANUAL_REVIEW'] as const;
/** One state of {@link PSP_STATES}. */
export type PspState = (typeof PSP_STATES)[number];

/** An intent's operation types: INVOICE_PAYMENT expires; PSP_TOPUP goes through the PSP worker. */
export type OperationType = 'INTERNAL_P2P' | 'INVOICE_PAYMENT' | 'PSP_TOPUP';

/** A payment intent as stored. */
export interface IntentRow {
  id: string;
  operation_type: OperationType;
  status: 'CREATED' | 'PROCESSING' | 'SETTLED' | 'FAILED' | 'EXPIRED';
  amount_satang: string;
  psp: string | null;
  pending_transfer_id: string | null;
}

/** A PSP row as stored. */
export interface PspRow {
  id: string;
  intent_id: string;
  psp: string;
  state: PspState;
  query_rq_uid: string | null;
  confirm_rq_uid: string | null;
  retry_count: number;
}

/** Creates the tables once, whichever pods start together (a transaction-scoped advisory lock orders them). */
export async function migratePm(db: { transaction<T>(fn: (tx: Executor) => Promise<T>): Promise<T> }, schema: string): Promise<void> {
  const q = `"${schema}"`;
  await db.transaction(async (tx) => {
    await tx.query({ text: `SELECT pg_advisory_xact_lock(hashtext($1))`, values: [`pm-migrate:${schema}`] });
    await tx.query({
      text: `
      CREATE TABLE IF NOT EXISTS ${q}.pm_intents (
        id uuid PRIMARY KEY, operation_type text NOT NULL, status text NOT NULL DEFAULT 'CREATED',
        amount_satang bigint NOT NULL CHECK (amount_satang > 0), psp text, pending_transfer_id uuid,
        expires_at timestamptz, created_at timestamptz NOT NULL DEFAULT now(), updated_at timestamptz NOT NULL DEFAULT now());
      CREATE INDEX IF NOT EXISTS pm_intents_expiry ON ${q}.pm_intents (expires_at) WHERE operation_type = 'INVOICE_PAYMENT' AND status = 'CREATED';
      CREATE TABLE IF NOT EXISTS ${q}.pm_psp_tx_map (
        id bigserial PRIMARY KEY, intent_id uuid NOT NULL UNIQUE REFERENCES ${q}.pm_intents (id), psp text NOT NULL,
        state text NOT NULL DEFAULT 'NEW' CHECK (state IN (${PSP_STATES.map((s) => `'${s}'`).join(', ')})),
        query_rq_uid text, confirm_rq_uid text, retry_count int NOT NULL DEFAULT 0,
        leased_by text, leased_until timestamptz, review_reason text, updated_at timestamptz NOT NULL DEFAULT now());
      CREATE TABLE IF NOT EXISTS ${q}.pm_psp_leases (row_id bigint NOT NULL, attempt int NOT NULL, lease_sec int NOT NULL, leased_by text NOT NULL, at timestamptz NOT NULL DEFAULT now());
      CREATE TABLE IF NOT EXISTS ${q}.pm_settlements (
        event_id bigint PRIMARY KEY, intent_id uuid NOT NULL UNIQUE, amount_satang bigint NOT NULL, pid int NOT NULL, at timestamptz NOT NULL DEFAULT now());
      CREATE TABLE IF NOT EXISTS ${q}.pm_sweeps (slot timestamptz NOT NULL, expired int NOT NULL, pid int NOT NULL, at timestamptz NOT NULL DEFAULT now());
      CREATE TABLE IF NOT EXISTS ${q}.pm_ledger_balances (account text PRIMARY KEY, balance_satang bigint NOT NULL);`,
    });
  });
}

/** The statements, bound to a schema. */
export function pmStore(schema: string) {
  const q = `"${schema}"`;
  return {
    async createIntent(db: Executor, i: { id: string; type: OperationType; amountSatang: number; psp: string | null; expiresInSec: number | null }): Promise<void> {
      await db.query({
        text: `INSERT INTO ${q}.pm_intents (id, operation_type, amount_satang, psp, expires_at)
               VALUES ($1, $2, $3, $4, CASE WHEN $5::int IS NULL THEN NULL ELSE now() + $5::int * interval '1 second' END)`,
        values: [i.id, i.type, i.amountSatang, i.psp, i.expiresInSec],
      });
    },
    async intent(db: Executor, id: string): Promise<IntentRow | undefined> {
      const { rows } = await db.query({ text: `SELECT id, operation_type, status, amount_satang, psp, pending_transfer_id FROM ${q}.pm_intents WHERE id = $1`, values: [id] });
      return rows[0] as IntentRow | undefined;
    },
    /** CREATED → PROCESSING with its reservation, unless it expired or moved on: the guard makes confirm and expire exclusive. */
    async startProcessing(db: Executor, id: string, pendingId: string): Promise<IntentRow | undefined> {
      const { rows } = await db.query({
        text: `UPDATE ${q}.pm_intents SET status = 'PROCESSING', pending_transfer_id = $2, updated_at = now()
               WHERE id = $1 AND status = 'CREATED' AND (expires_at IS NULL OR expires_at > now())
               RETURNING id, operation_type, status, amount_satang, psp, pending_transfer_id`,
        values: [id, pendingId],
      });
      return rows[0] as IntentRow | undefined;
    },
    /** PROCESSING → SETTLED / FAILED; nothing when an earlier attempt already moved it (the rerun after a kill). */
    async finish(db: Executor, id: string, status: 'SETTLED' | 'FAILED'): Promise<IntentRow | undefined> {
      const { rows } = await db.query({
        text: `UPDATE ${q}.pm_intents SET status = $2, updated_at = now() WHERE id = $1 AND status = 'PROCESSING'
               RETURNING id, operation_type, status, amount_satang, psp, pending_transfer_id`,
        values: [id, status],
      });
      return rows[0] as IntentRow | undefined;
    },
    /** writeSettlement: one row per event (the primary key refuses a second). */
    async writeSettlement(db: Executor, eventId: string, intent: IntentRow): Promise<void> {
      await db.query({ text: `INSERT INTO ${q}.pm_settlements (event_id, intent_id, amount_satang, pid) VALUES ($1, $2, $3, $4)`, values: [eventId, intent.id, intent.amount_satang, process.pid] });
    },
    /** channel.expire(): one atomic statement, so an invoice paid meanwhile is never expired; SKIP LOCKED keeps sweeps from waiting on a payment in flight. */
    async expireInvoices(db: Executor, limit: number): Promise<string[]> {
      const { rows } = await db.query({
        text: `UPDATE ${q}.pm_intents SET status = 'EXPIRED', updated_at = now()
               WHERE id IN (SELECT id FROM ${q}.pm_intents WHERE operation_type = 'INVOICE_PAYMENT' AND status = 'CREATED' AND expires_at < now()
                            ORDER BY expires_at LIMIT $1 FOR UPDATE SKIP LOCKED)
                 AND status = 'CREATED' AND expires_at < now()
               RETURNING id`,
        values: [limit],
      });
      return (rows as { id: string }[]).map((r) => r.id);
    },
    async recordSweep(db: Executor, slot: string, expired: number): Promise<void> {
      await db.query({ text: `INSERT INTO ${q}.pm_sweeps (slot, expired, pid) VALUES ($1, $2, $3)`, values: [slot, expired, process.pid] });
    },
    async createPspRow(db: Executor, intentId: string, psp: string): Promise<string> {
      const { rows } = await db.query({ text: `INSERT INTO ${q}.pm_psp_tx_map (intent_id, psp) VALUES ($1, $2) RETURNING id::text`, values: [intentId, psp] });
      return (rows[0] as { id: string }).id;
    },
    async pspRow(db: Executor, id: string): Promise<PspRow | undefined> {
      const { rows } = await db.query({ text: `SELECT id::text, intent_id, psp, state, query_rq_uid, confirm_rq_uid, retry_count FROM ${q}.pm_psp_tx_map WHERE id = $1`, values: [id] });
      return rows[0] as PspRow | undefined;
    },
    /** The seed's lease columns, for audit: who works the row, until when, and the lease length of this attempt. */
    async leasePspRow(db: Executor, id: string, attempt: number, leaseSec: number, by: string): Promise<void> {
      await db.query({
        text: `UPDATE ${q}.pm_psp_tx_map SET leased_by = $3, leased_until = now() + $4::int * interval '1 second', retry_count = $2 - 1 WHERE id = $1`,
        values: [id, attempt, by, leaseSec],
      });
      await db.query({ text: `INSERT INTO ${q}.pm_psp_leases (row_id, attempt, lease_sec, leased_by) VALUES ($1, $2, $3, $4)`, values: [id, attempt, leaseSec, by] });
    },
    /** Moves a row from one state to the next; false when it was not in `from` (another writer moved it). */
    async movePspRow(db: Executor, id: string, from: PspState, to: PspState, set: { queryRqUid?: string; confirmRqUid?: string; reviewReason?: string } = {}): Promise<boolean> {
      const { rowCount } = await db.query({
        text: `UPDATE ${q}.pm_psp_tx_map SET state = $3, query_rq_uid = coalesce($4, query_rq_uid), confirm_rq_uid = coalesce($5, confirm_rq_uid),
                 review_reason = coalesce($6, review_reason), updated_at = now()
               WHERE id = $1 AND state = $2`,
        values: [id, from, to, set.queryRqUid ?? null, set.confirmRqUid ?? null, set.reviewReason ?? null],
      });
      return rowCount === 1;
    },
  };
}

/** The store's type. */
export type PmStore = ReturnType<typeof pmStore>;
