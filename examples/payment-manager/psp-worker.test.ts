import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cli } from '../../test/support/cli.js';
import { useTestDatabase } from '../../test/support/db.js';
import { waitFor } from '../../test/support/wait.js';
import { pmHarness, type Pod } from './pm-harness.js';
import { traceIdOf } from './trace.js';

// Seed 002's PSP worker: NEW → QUERY_PENDING → QUERIED → CONFIRM_PENDING → INQUIRING → CONFIRMED |
// FAILED | MANUAL_REVIEW on two psp-worker pods, the seed's lease TTLs (10 s first, 30 s on retry),
// and the orphan rqUID: a pod killed after sending a confirm leaves the row for MANUAL_REVIEW, a
// held job an operator resolves from the CLI to CONFIRMED or FAILED, audited. The PSP is a fake on loopback.
const t = useTestDatabase('pmpsp');
const CONFIG = 'examples/payment-manager/nightshift.config.ts';
const ROOT = new URL('../..', import.meta.url).pathname;
let h: Awaited<ReturnType<typeof pmHarness>>;
let api: string;
const q = () => `"${t.schema}"`;

beforeAll(async () => {
  h = await pmHarness(t);
  api = (await h.pod('api')).api!;
  await Promise.all([h.pod('psp-worker'), h.pod('psp-worker'), h.pod('outbox-worker')]);
});
afterAll(() => h.close());

const row = async (intentId: string) =>
  (await t.sql.query(`SELECT id::text, state, query_rq_uid, confirm_rq_uid, leased_by FROM ${q()}.pm_psp_tx_map WHERE intent_id = $1`, [intentId])).rows[0] as
    { id: string; state: string; query_rq_uid: string | null; confirm_rq_uid: string | null; leased_by: string } | undefined;
const intentStatus = async (id: string) => (await t.sql.query(`SELECT status FROM ${q()}.pm_intents WHERE id = $1`, [id])).rows[0]?.status as string;
const leases = async (intentId: string) =>
  (
    (await t.sql.query(`SELECT l.attempt, l.lease_sec FROM ${q()}.pm_psp_leases l JOIN ${q()}.pm_psp_tx_map m ON m.id = l.row_id WHERE m.intent_id = $1 ORDER BY l.at`, [intentId])).rows as {
      attempt: number;
      lease_sec: number;
    }[]
  ).map((l) => [l.attempt, l.lease_sec]);
const topUp = () => h.pay(api, { operationType: 'PSP_TOPUP', amountSatang: 50_000, psp: 'IPPS' });
const settledAs = (id: string, status: string) => waitFor(`intent ${id} ${status}`, async () => (await intentStatus(id)) === status, { timeoutMs: 90_000 });
const pspJobOf = async (ns: ReturnType<typeof t.client>, rowId: string) => (await ns.listJobs({ kind: 'psp-process', limit: 1000 })).find((j) => (j.payload as { rowId: string }).rowId === rowId)!;

describe('seed 002: the PSP worker', () => {
  it('runs the happy path to CONFIRMED under a 10 s first lease, then the outbox settles it; the trace id is the intent id', async () => {
    const ns = t.client();
    const id = await topUp();
    await settledAs(id, 'SETTLED');
    const r = (await row(id))!;
    expect(r).toMatchObject({ state: 'CONFIRMED' });
    expect(r.query_rq_uid).toBeTruthy();
    expect(r.confirm_rq_uid).toBeTruthy();
    expect(r.leased_by).toMatch(/\.\d+$/);
    expect(await leases(id)).toEqual([[1, 10]]);
    // The PSP was asked in the state machine's order, with the stored rqUIDs.
    const calls = h.psp.requests.filter((c) => c.body.intentId === id || c.body.rqUID === r.confirm_rq_uid).map((c) => c.path);
    expect(calls).toEqual(['/query', '/confirm', '/inquire']);
    const job = await pspJobOf(ns, r.id);
    expect(job.traceContext?.traceparent).toContain(`00-${traceIdOf(id)}-`);
  });

  it('retries a failed query under the 30 s retry lease', async () => {
    h.psp.queryFailures = 1;
    const id = await topUp();
    await settledAs(id, 'SETTLED');
    expect(await leases(id)).toEqual([
      [1, 10],
      [2, 30],
    ]);
  });

  it('a declined query and a failed inquiry end FAILED and void the reservation; PENDING is asked again until decided', async () => {
    // Each intent is created, the PSP told how to answer it, then confirmed.
    const prepared = async (answer: (id: string) => void) => {
      const created = await h.call(api, 'POST', '/intents', { operationType: 'PSP_TOPUP', amountSatang: 20_000 });
      const id = created.body.id as string;
      answer(id);
      expect((await h.call(api, 'POST', `/intents/${id}/confirm`)).status).toBe(202);
      return id;
    };
    const declined = await prepared((id) => h.psp.declined.add(id));
    const failed = await prepared((id) => h.psp.outcomes.set(id, 'FAILED'));
    const pending = await prepared((id) => h.psp.outcomes.set(id, 'PENDING'));
    await settledAs(declined, 'FAILED');
    expect((await row(declined))!.state).toBe('FAILED');
    expect(h.psp.calledOn('/confirm').some((c) => c.body.intentId === declined)).toBe(false);
    await settledAs(failed, 'FAILED');
    expect((await row(failed))!.state).toBe('FAILED');
    const inquiries = async () => {
      const r = await row(pending);
      return h.psp.calledOn('/inquire').filter((c) => r?.confirm_rq_uid && c.body.rqUID === r.confirm_rq_uid).length;
    };
    await waitFor('the pending payment inquired twice', async () => (await inquiries()) >= 2);
    expect((await row(pending))!.state).toBe('INQUIRING');
    h.psp.outcomes.set(pending, 'SUCCESS');
    await settledAs(pending, 'SETTLED');
    const pendingOf = async (id: string) => (await t.sql.query(`SELECT pending_transfer_id FROM ${q()}.pm_intents WHERE id = $1`, [id])).rows[0].pending_transfer_id as string;
    expect(h.ledger.pending.get(await pendingOf(declined))?.state).toBe('voided');
    expect(h.ledger.pending.get(await pendingOf(failed))?.state).toBe('voided');
    expect(h.ledger.pending.get(await pendingOf(pending))?.state).toBe('posted');
  });

  for (const [as, psp, status] of [
    ['completed', 'CONFIRMED', 'SETTLED'],
    ['failed', 'FAILED', 'FAILED'],
  ] as const) {
    it(`an orphan rqUID goes to MANUAL_REVIEW as a held job; resolved --as ${as} from the CLI it is ${psp}, audited`, async () => {
      const ns = t.client();
      const created = await h.call(api, 'POST', '/intents', { operationType: 'PSP_TOPUP', amountSatang: 77_000 });
      const id = created.body.id as string;
      h.psp.hangConfirmFor = id;
      expect((await h.call(api, 'POST', `/intents/${id}/confirm`)).status).toBe(202);
      // The confirm went out; the pod that sent it dies before writing its rqUID.
      await waitFor('the confirm sent', () => h.psp.calledOn('/confirm').some((c) => c.body.intentId === id));
      const sender = (await row(id))!.leased_by.split('.').pop();
      const pod = h.pods.find((p: Pod) => String(p.proc.pid) === sender)!;
      pod.proc.kill('SIGKILL');
      await pod.proc.exited;
      h.pods.splice(h.pods.indexOf(pod), 1);
      await h.pod('psp-worker');

      const r = await waitFor('MANUAL_REVIEW', async () => ((await row(id))?.state === 'MANUAL_REVIEW' ? row(id) : undefined), { timeoutMs: 90_000 });
      expect(r.confirm_rq_uid).toBeNull();
      const job = await waitFor('the held job', async () => {
        const j = await pspJobOf(ns, r.id);
        return j.state === 'held' ? j : undefined;
      });
      expect(job.reason).toContain('orphan rqUID');
      // Never confirmed twice.
      expect(h.psp.calledOn('/confirm').filter((c) => c.body.intentId === id)).toHaveLength(1);
      expect(await intentStatus(id)).toBe('PROCESSING');

      const env = { DATABASE_URL: t.url, NS_SCHEMA: t.schema };
      // A retry could confirm twice: refused, the job stays held.
      const retry = await cli(['--config', CONFIG, '--actor', 'ops-anna', 'jobs', 'resolve', job.id, '--as', 'retry', '--reason', 'try again'], { env, cwd: ROOT });
      expect(retry.code).not.toBe(0);
      expect(retry.stderr).toContain('not retried');
      expect((await ns.getJob(job.id)).state).toBe('held');

      const reason = as === 'completed' ? 'IPPS statement shows the payment' : 'IPPS has no such payment';
      const done = await cli(['--config', CONFIG, '--actor', 'ops-anna', 'jobs', 'resolve', job.id, '--as', as, '--reason', reason], { env, cwd: ROOT });
      expect(done.code, done.stderr).toBe(0);
      expect((await row(id))!.state).toBe(psp);
      await settledAs(id, status);
      const pendingId = (await t.sql.query(`SELECT pending_transfer_id FROM ${q()}.pm_intents WHERE id = $1`, [id])).rows[0].pending_transfer_id as string;
      expect(h.ledger.pending.get(pendingId)?.state).toBe(as === 'completed' ? 'posted' : 'voided');
      expect(h.ledger.applied(pendingId)).toBe(1);
      const resolved = await ns.getJob(job.id);
      expect(resolved.state).toBe(as === 'completed' ? 'completed' : 'discarded');
      const audit = await ns.listAudit({ target: `job:${job.id}` });
      expect(audit.find((a) => a.action.includes('resolve'))).toMatchObject({ actor: 'ops-anna', reason });
      // The outbox event the resolve enqueued carries the intent's trace too.
      const event = (await ns.listJobs({ kind: 'outbox-event', limit: 1000 })).find((j) => (j.payload as { intentId: string }).intentId === id)!;
      expect(event.traceContext?.traceparent).toContain(`00-${traceIdOf(id)}-`);
    });
  }
});
