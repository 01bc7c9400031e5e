import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../../test/support/db.js';
import { waitFor } from '../../test/support/wait.js';
import { pmHarness } from './pm-harness.js';
import { traceIdOf } from './trace.js';

// Seed 002 §7/§10: the outbox worker, multi-instance. post_pending events are jobs enqueued in the
// transaction of the intent's state change; two and three outbox-worker pods (real processes, one
// SIGKILLed in the middle of a post) apply them to a fake TigerBeetle on loopback, and every side
// effect the seed says fires twice with two workers — writeSettlement, publishStatus,
// publishPaymentNotification — happens once per event.
const t = useTestDatabase('pmout');
let h: Awaited<ReturnType<typeof pmHarness>>;
const q = () => `"${t.schema}"`;

beforeAll(async () => {
  h = await pmHarness(t);
});
afterAll(() => h.close());

describe('seed 002: the outbox worker on several pods', () => {
  for (const workers of [2, 3]) {
    it(`${workers} outbox-worker pods, one killed mid-post: each pending transfer posted once, each side effect once per event`, async () => {
      const ns = t.client();
      // The first pod runs the seed's default roles (api,outbox-worker); the others only the outbox.
      const first = await h.pod(undefined);
      const others = await Promise.all(Array.from({ length: workers - 1 }, () => h.pod('outbox-worker')));
      const victim = others[0]!;
      const api = first.api!;
      h.ledger.delayMs = 20;
      const held = h.ledger.waitForHeld(victim.proc.pid);

      const ids: string[] = [];
      for (let i = 0; i < 40; i++) ids.push(await h.pay(api, { operationType: 'INTERNAL_P2P', amountSatang: 1_000 + i }));
      // The victim's post reached the ledger and was applied; its pod dies before it hears back.
      await held;
      victim.proc.kill('SIGKILL');
      await victim.proc.exited;

      const settled = async () => (await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.pm_intents WHERE id = ANY($1) AND status = 'SETTLED'`, [ids])).rows[0].n as number;
      await waitFor('every intent settled', async () => (await settled()) === ids.length, { timeoutMs: 90_000 });
      const keys = (ch: string) =>
        new Set(
          h.hub
            .appliedOn(ch)
            .filter((d) => ids.includes(d.body.intentId as string))
            .map((d) => d.key),
        );
      await waitFor('every status and notification published', () => keys('status').size === ids.length && keys('notification').size === ids.length, { timeoutMs: 90_000 });

      const intents = (await t.sql.query(`SELECT id, pending_transfer_id FROM ${q()}.pm_intents WHERE id = ANY($1)`, [ids])).rows as { id: string; pending_transfer_id: string }[];
      // The ledger: each pending transfer posted exactly once; the killed pod's event ran again
      // elsewhere and was refused as already posted (the seed's non-fatal result).
      for (const i of intents) expect(h.ledger.applied(i.pending_transfer_id), i.id).toBe(1);
      const pendingIds = new Set(intents.map((i) => i.pending_transfer_id));
      const mine = h.ledger.settles.filter((s) => pendingIds.has(s.pendingId));
      expect(mine.filter((s) => s.result === 'pending_transfer_already_posted').length).toBeGreaterThanOrEqual(1);
      // Several pods did the work (multi-instance), the victim among them.
      const posters = new Set(mine.filter((s) => s.result === 'ok').map((s) => s.pid));
      expect(posters.size).toBeGreaterThanOrEqual(2);
      expect(posters).toContain(victim.proc.pid);

      // writeSettlement: one row per intent, keyed by its event (the outbox job's id).
      const settlements = (await t.sql.query(`SELECT intent_id, event_id::text FROM ${q()}.pm_settlements WHERE intent_id = ANY($1)`, [ids])).rows as { intent_id: string; event_id: string }[];
      expect(settlements).toHaveLength(ids.length);
      expect(new Set(settlements.map((s) => s.intent_id)).size).toBe(ids.length);

      // Each event's status and notification: exactly one of each applied, for the right event.
      for (const s of settlements) {
        expect(h.hub.applied.get(`${s.event_id}:status`)?.body).toMatchObject({ intentId: s.intent_id, status: 'SETTLED' });
        expect(h.hub.applied.get(`${s.event_id}:notification`)?.body).toMatchObject({ intentId: s.intent_id, status: 'SETTLED' });
      }
      expect(h.hub.appliedOn('status').filter((d) => ids.includes(d.body.intentId as string))).toHaveLength(ids.length);
      // Every outbox job completed (the rerun of the killed one included), read through the admin API.
      // (A job's completion is batched after its handler's writes: wait for it.)
      const outboxEvents = async () => (await ns.listJobs({ kind: 'outbox-event', limit: 1000 })).filter((j) => ids.includes((j.payload as { intentId: string }).intentId));
      await waitFor('every outbox job completed', async () => (await outboxEvents()).every((j) => j.state === 'completed'), { timeoutMs: 90_000 });
      const events = await outboxEvents();
      expect(events).toHaveLength(ids.length);
      expect(events.every((j) => j.state === 'completed')).toBe(true);
      // The killed pod's event was rescued and ran again (its attempt counts only when the pod had
      // recorded the handler's start: a kill within its first 100 ms gives the attempt back).
      expect(events.some((j) => j.errors.some((e) => e.kind === 'lease-expired'))).toBe(true);

      // trace id = intent id: the outbox event and both publishing jobs carry it, and so do the deliveries.
      const one = ids[7]!;
      const trace = traceIdOf(one);
      const jobs = [
        ...(await ns.listJobs({ kind: 'outbox-event', limit: 1000 })),
        ...(await ns.listJobs({ kind: 'publish-status', limit: 1000 })),
        ...(await ns.listJobs({ kind: 'publish-payment-notification', limit: 1000 })),
      ].filter((j) => (j.payload as { intentId: string }).intentId === one);
      expect(jobs.map((j) => j.kind).sort()).toEqual(['outbox-event', 'publish-payment-notification', 'publish-status']);
      for (const j of jobs) expect(j.traceContext?.traceparent, j.kind).toContain(`00-${trace}-`);
      expect(h.hub.deliveries.filter((d) => d.body.intentId === one).every((d) => d.traceparent?.startsWith(`00-${trace}-`))).toBe(true);

      for (const p of [first, ...others.slice(1)]) p.proc.kill('SIGTERM');
      await Promise.all([first, ...others.slice(1)].map((p) => p.proc.exited));
      h.pods.splice(0);
    });
  }
});
