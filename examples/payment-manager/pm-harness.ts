// What the payment manager's tests share: the fakes on loopback, pods as real processes
// (server.ts with WORKER_ROLES), and calls to the API.
import { expect } from 'vitest';
import { startScript, type Proc } from '../../test/support/processes.js';
import { FakeHub } from './fake-hub.js';
import { FakeLedger } from './fake-ledger.js';
import { FakePsp } from './fake-psp.js';

/** A pod: its process and, with the `api` role, its API's base URL. */
export interface Pod {
  proc: Proc;
  api: string | undefined;
}

/** The fakes and the environment every pod gets. */
export async function pmHarness(db: { url: string; schema: string }, extra: Record<string, string> = {}) {
  const ledger = new FakeLedger();
  const hub = new FakeHub();
  const psp = new FakePsp();
  const env: Record<string, string> = {
    DATABASE_URL: db.url,
    NS_SCHEMA: db.schema,
    PORT: '0',
    LEDGER_URL: await ledger.start(),
    NOTIFY_URL: await hub.start(),
    PSP_IPPS_URL: await psp.start(),
    // A dead pod's jobs come back after 2 s instead of 30 s.
    PM_LEASE_MS: '2000',
    NIGHTSHIFT_LOG_LEVEL: 'warn',
    ...extra,
  };
  const pods: Pod[] = [];

  /** Starts a pod with these roles (undefined: WORKER_ROLES unset, the seed's default) and waits until it runs. */
  const pod = async (roles: string | undefined, more: Record<string, string> = {}): Promise<Pod> => {
    const podEnv: Record<string, string> = { ...env, ...more };
    if (roles !== undefined) podEnv.WORKER_ROLES = roles;
    const proc = startScript('examples/payment-manager/server.ts', roles === undefined ? { ...podEnv, WORKER_ROLES: '' } : podEnv);
    await proc.waitForLine('started: roles');
    const m = /api on (http:\/\/127\.0\.0\.1:\d+)/.exec(proc.output());
    const p = { proc, api: m?.[1] };
    pods.push(p);
    return p;
  };

  const call = async (api: string, method: string, path: string, body?: unknown) => {
    const res = await fetch(new URL(path, api), { method, headers: { 'content-type': 'application/json' }, ...(body ? { body: JSON.stringify(body) } : {}) });
    return { status: res.status, traceparent: res.headers.get('traceparent'), body: (await res.json()) as Record<string, unknown> };
  };

  /** Creates and confirms an intent through the API; returns its id. */
  const pay = async (api: string, intent: Record<string, unknown>): Promise<string> => {
    const created = await call(api, 'POST', '/intents', intent);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = created.body.id as string;
    const confirmed = await call(api, 'POST', `/intents/${id}/confirm`);
    expect(confirmed.status, JSON.stringify(confirmed.body)).toBe(202);
    return id;
  };

  /** Stops every pod still running (SIGTERM, then SIGKILL for any that hangs) and the fakes. */
  const close = async () => {
    for (const p of pods) p.proc.kill('SIGTERM');
    await Promise.all(pods.map((p) => Promise.race([p.proc.exited, new Promise((r) => setTimeout(r, 15_000))])));
    for (const p of pods) p.proc.kill('SIGKILL');
    await Promise.all(pods.map((p) => p.proc.exited));
    await Promise.all([ledger.stop(), hub.stop(), psp.stop()]);
  };

  return { ledger, hub, psp, env, pods, pod, call, pay, close };
}
