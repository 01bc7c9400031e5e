import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../../test/support/db.js';
import { startScript } from '../../test/support/processes.js';
import { waitFor } from '../../test/support/wait.js';
import { pmHarness } from './pm-harness.js';

// Seed 002's pods: WORKER_ROLES through nightshift's roles (the default, the typical mistake
// refused with the list), the invoice-expiry sweep once per tick on three pods, and the SIGTERM
// drain of a headless pod.
const t = useTestDatabase('pmpod');
let h: Awaited<ReturnType<typeof pmHarness>>;
const q = () => `"${t.schema}"`;

beforeAll(async () => {
  h = await pmHarness(t, { INVOICE_EXPIRY_SWEEP_INTERVAL_MS: '1000' });
});
afterAll(() => h.close());

const stopAll = async () => {
  for (const p of h.pods) p.proc.kill('SIGTERM');
  await Promise.all(h.pods.map((p) => p.proc.exited));
  h.pods.splice(0);
};

describe('seed 002: roles, the invoice sweep, the drain', () => {
  it('refuses the typical mistake (outbox, psp-ipps, balance-monitor as roles) with the list of the four, before doing anything', async () => {
    const p = startScript('examples/payment-manager/server.ts', { ...h.env, WORKER_ROLES: 'outbox,psp-ipps,balance-monitor' });
    expect((await p.exited).code).toBe(2);
    expect(p.output()).toContain('unknown roles: "outbox", "psp-ipps", "balance-monitor"');
    expect(p.output()).toContain('valid roles: api, outbox-worker, psp-worker, invoice-expiry');
    expect(p.output()).toContain('did you mean "outbox-worker"');
    // Nothing started: no process registered, no table made.
    expect((await t.sql.query(`SELECT to_regclass($1) AS t`, [`${t.schema}.pm_intents`])).rows[0].t).toBeNull();
  });

  it('runs api,outbox-worker when WORKER_ROLES is unset, and exactly the roles given otherwise', async () => {
    const ns = t.client();
    const dflt = await h.pod(undefined);
    const headless = await h.pod('psp-worker,invoice-expiry');
    expect(dflt.api).toBeDefined();
    expect(headless.api).toBeUndefined();
    const procs = await ns.listProcesses();
    const byPid = new Map(procs.map((p) => [p.pid, { roles: p.roles, info: p.info as { kinds: string[]; schedules: string[] } }]));
    expect(byPid.get(dflt.proc.pid)!.roles).toEqual(['api', 'outbox-worker']);
    expect(byPid.get(dflt.proc.pid)!.info.kinds.sort()).toEqual(['outbox-event', 'publish-payment-notification', 'publish-status']);
    expect(byPid.get(headless.proc.pid)!.roles).toEqual(['psp-worker', 'invoice-expiry']);
    expect(byPid.get(headless.proc.pid)!.info.kinds.sort()).toEqual(['invoice-expiry', 'psp-process']);
    expect(byPid.get(headless.proc.pid)!.info.schedules).toEqual(['invoice-expiry']);
    await stopAll();
  });

  it('expires overdue invoices in batches of 100, one sweep per tick across three pods, atomically', async () => {
    // 250 overdue invoices; one overdue but already being paid; one not yet due; one overdue P2P intent (not an invoice).
    const insert = (status: string, type: string, expiresSql: string, n = 1) =>
      t.sql.query(`INSERT INTO ${q()}.pm_intents (id, operation_type, status, amount_satang, expires_at) SELECT gen_random_uuid(), $1, $2, 100, ${expiresSql} FROM generate_series(1, $3)`, [type, status, n]);
    await h.pod('invoice-expiry'); // makes the tables
    await stopAll();
    await insert('CREATED', 'INVOICE_PAYMENT', `now() - interval '1 minute'`, 250);
    const paying = randomUUID();
    await t.sql.query(`INSERT INTO ${q()}.pm_intents (id, operation_type, status, amount_satang, expires_at) VALUES ($1, 'INVOICE_PAYMENT', 'PROCESSING', 100, now() - interval '1 minute')`, [paying]);
    await insert('CREATED', 'INVOICE_PAYMENT', `now() + interval '1 hour'`);
    await insert('CREATED', 'INTERNAL_P2P', `now() - interval '1 minute'`);
    await Promise.all([h.pod('invoice-expiry'), h.pod('invoice-expiry'), h.pod('invoice-expiry,outbox-worker')]);

    const expired = async () => (await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.pm_intents WHERE status = 'EXPIRED'`)).rows[0].n as number;
    await waitFor('all 250 expired', async () => (await expired()) === 250, { timeoutMs: 90_000 });
    // Two more ticks, so a pod sweeping on its own would have shown up.
    const sweeps = async () => (await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.pm_sweeps`)).rows[0].n as number;
    const now = await sweeps();
    await waitFor('two more ticks', async () => (await sweeps()) >= now + 2, { timeoutMs: 60_000 });
    await stopAll();

    const rows = (await t.sql.query(`SELECT slot, expired, pid FROM ${q()}.pm_sweeps ORDER BY slot`)).rows as { slot: Date; expired: number; pid: number }[];
    // Once per tick: no slot swept twice, whichever of the three pods ran it.
    expect(new Set(rows.map((r) => r.slot.toISOString())).size).toBe(rows.length);
    expect(rows.every((r) => r.expired <= 100)).toBe(true);
    expect(rows.filter((r) => r.expired > 0).map((r) => r.expired)).toEqual([100, 100, 50]);
    expect(await expired()).toBe(250);
    const left = (await t.sql.query(`SELECT operation_type, status FROM ${q()}.pm_intents WHERE status <> 'EXPIRED' ORDER BY operation_type, status`)).rows;
    expect(left).toEqual([
      { operation_type: 'INTERNAL_P2P', status: 'CREATED' },
      { operation_type: 'INVOICE_PAYMENT', status: 'CREATED' },
      { operation_type: 'INVOICE_PAYMENT', status: 'PROCESSING' },
    ]);
    // The schedule's ticks, read through the admin API: each one enqueued its sweep once.
    const ns = t.client();
    const ticks = await ns.scheduleTicks('invoice-expiry', { limit: 1000 });
    expect(ticks.length).toBeGreaterThanOrEqual(rows.length);
  });

  it('drains a headless pod on SIGTERM: the post in flight finishes, nothing is handed to the ledger twice, exit 0', async () => {
    const ns = t.client();
    const api = (await h.pod('api')).api!;
    const headless = await h.pod('outbox-worker,psp-worker');
    h.ledger.delayMs = 1_500;
    const arrived = h.ledger.nextSettleFrom(headless.proc.pid);
    const id = await h.pay(api, { operationType: 'INTERNAL_P2P', amountSatang: 4_200 });
    await arrived;
    headless.proc.kill('SIGTERM');
    const exit = await headless.proc.exited;
    h.ledger.delayMs = 0;
    expect(exit.code, headless.proc.output()).toBe(0);
    expect(headless.proc.output()).toContain('SIGTERM: draining');
    expect(headless.proc.output()).toContain('stopped');
    // The event in flight completed on its first attempt, before the pod left.
    const event = (await ns.listJobs({ kind: 'outbox-event', limit: 100 })).find((j) => (j.payload as { intentId: string }).intentId === id)!;
    expect(event).toMatchObject({ state: 'completed', attempt: 1 });
    expect((await t.sql.query(`SELECT status FROM ${q()}.pm_intents WHERE id = $1`, [id])).rows[0].status).toBe('SETTLED');
    const pendingId = (await t.sql.query(`SELECT pending_transfer_id FROM ${q()}.pm_intents WHERE id = $1`, [id])).rows[0].pending_transfer_id as string;
    expect(h.ledger.settles.filter((s) => s.pendingId === pendingId).map((s) => s.result)).toEqual(['ok']);
    // Its follow-ups wait for the next outbox pod, which publishes them.
    await h.pod('outbox-worker');
    await waitFor('published', () => h.hub.appliedOn('status').some((d) => d.body.intentId === id) && h.hub.appliedOn('notification').some((d) => d.body.intentId === id));
    await stopAll();
  });
});
