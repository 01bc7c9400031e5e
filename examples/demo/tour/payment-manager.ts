// Seed 002, the payment manager (examples/payment-manager): two pods of its server.ts with the
// seed's WORKER_ROLES — `api,outbox-worker` and `psp-worker,invoice-expiry` — against its fakes of
// the ledger, the PSP and the notification hub on loopback. The scripted step: a top-up whose
// PSP confirm never answers. The attempt gives up at its lease (PSP_LEASE_SEC), the retry finds
// the row in CONFIRM_PENDING without an rqUID — the seed's orphan rqUID — so the row goes to
// MANUAL_REVIEW and its job is held; an operator resolves it with `nightshift jobs resolve`.
import { FakeHub } from '../../payment-manager/fake-hub.js';
import { FakeLedger } from '../../payment-manager/fake-ledger.js';
import { FakePsp } from '../../payment-manager/fake-psp.js';
import { CLI, waitFor } from './fleet.js';
import { configOptions, guarded, type TourContext, type TourSystem } from './system.js';

const SCHEMA = 'payment_manager';
const SERVER = 'examples/payment-manager/server.ts';
const CONFIG = 'examples/payment-manager/nightshift.config.ts';

/** Starts the payment manager's fakes and its two pods. */
export async function startPaymentManager(ctx: TourContext): Promise<TourSystem> {
  const ledger = new FakeLedger();
  const hub = new FakeHub();
  const psp = new FakePsp();
  const env = {
    DATABASE_URL: ctx.databaseUrl,
    NS_SCHEMA: SCHEMA,
    PORT: '0',
    LEDGER_URL: await ledger.start(),
    NOTIFY_URL: await hub.start(),
    PSP_IPPS_URL: await psp.start(),
    // The first attempt's PSP calls are bounded by 2 s (the seed's 10 s, shortened for the tour).
    PSP_LEASE_SEC: '2',
    PM_LEASE_MS: '3000',
  };
  // The api pod migrates first; the other pod's migration then finds everything in place.
  const api = ctx.fleet.start('payment-manager api,outbox-worker', SERVER, { ...env, WORKER_ROLES: 'api,outbox-worker' });
  await api.waitForLine('started: roles');
  const apiUrl = /api on (http:\/\/127\.0\.0\.1:\d+)/.exec(api.output())![1]!;
  const pspPod = ctx.fleet.start('payment-manager psp-worker,invoice-expiry', SERVER, { ...env, WORKER_ROLES: 'psp-worker,invoice-expiry' });
  await pspPod.waitForLine('started: roles');

  const call = async (method: string, path: string, body?: unknown) => {
    const res = await fetch(new URL(path, apiUrl), { method, headers: { 'content-type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) });
    return { status: res.status, body: (await res.json()) as Record<string, unknown> };
  };
  const q = `"${SCHEMA}".`;
  const one = async <T>(text: string, values: unknown[]) => (await ctx.sql.query(text, values)).rows[0] as T | undefined;

  const play = () =>
    guarded(async () => {
      const lines: string[] = [];
      const created = await call('POST', '/intents', { operationType: 'PSP_TOPUP', amountSatang: 77_000 });
      if (created.status !== 201) throw new Error(`POST /intents answered ${created.status}: ${JSON.stringify(created.body)}`);
      const id = created.body.id as string;
      psp.hangConfirmFor = id; // the PSP takes the confirm and never answers
      const confirmed = await call('POST', `/intents/${id}/confirm`);
      if (confirmed.status !== 202) throw new Error(`confirm answered ${confirmed.status}`);
      lines.push(`top-up ${id.slice(0, 8)}… of 770.00 THB confirmed; the PSP took the confirm and never answered`);
      const held = await waitFor(
        'the PSP job to be held for review',
        () =>
          one<{ id: string; reason: string }>(
            `SELECT j.id::text, j.reason FROM ${q}jobs j JOIN ${q}pm_psp_tx_map m ON m.id::text = j.payload->>'rowId' WHERE j.kind = 'psp-process' AND j.state = 'held' AND m.intent_id = $1 AND m.state = 'MANUAL_REVIEW'`,
            [id],
          ),
        150_000,
      );
      lines.push(`PSP row in MANUAL_REVIEW, job ${held.id} held: "${held.reason.slice(0, 72)}…"`);
      const resolve = await ctx.fleet.run('payment-manager cli', CLI, env, [
        '--config',
        CONFIG,
        '--actor',
        'ops-anna',
        'jobs',
        'resolve',
        held.id,
        '--as',
        'completed',
        '--reason',
        'IPPS statement shows the payment',
      ]);
      if (resolve.code !== 0) throw new Error(`jobs resolve exited ${resolve.code}: ${resolve.output.trim()}`);
      lines.push(`ops-anna: nightshift jobs resolve ${held.id} --as completed --reason "IPPS statement shows the payment"`);
      await waitFor('the intent to settle', async () => (await one<{ status: string }>(`SELECT status FROM ${q}pm_intents WHERE id = $1`, [id]))?.status === 'SETTLED');
      const confirms = psp.calledOn('/confirm').filter((c) => c.body.intentId === id).length;
      const audited = await one<{ actor: string }>(`SELECT actor FROM ${q}audit_log WHERE target = $1 AND action LIKE '%resolve%'`, [`job:${held.id}`]);
      lines.push(`intent SETTLED through the outbox; the PSP was asked to confirm ${confirms} time(s); audited as ${audited?.actor ?? 'nobody'}`);
      return { ok: confirms === 1 && audited?.actor === 'ops-anna', lines };
    });

  const options = await configOptions('../../payment-manager/nightshift.config.ts', env, ctx.databaseUrl);
  return {
    dashboard: { id: 'payment-manager', title: 'payment-manager (seed 002): the outbox, the PSP state machine, held payments, the invoice sweep', options },
    play,
    stop: async () => {
      await Promise.all([ledger.stop(), hub.stop(), psp.stop()]);
    },
  };
}
