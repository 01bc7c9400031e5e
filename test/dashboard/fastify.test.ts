import Fastify, { type FastifyInstance } from 'fastify';
import { afterEach, expect, it } from 'vitest';
import { z } from 'zod';
import { createDashboard, dashboardPlugin } from '../../src/dashboard/index.js';
import { defineJob } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';

const t = useTestDatabase('dfastify');
t.migrateBeforeAll();

const mail = defineJob({ kind: 'mail.send', payload: z.object({ to: z.string() }), queue: 'mail', run: async () => undefined });
const auth = { basic: [{ name: 'ops-carol', password: 'carol-password', permissions: ['read' as const, 'act' as const] }] };
const carol = `Basic ${Buffer.from('ops-carol:carol-password').toString('base64')}`;

let app: FastifyInstance | undefined;
afterEach(async () => {
  await app?.close();
  app = undefined;
});

/** A fastify app of the user's own (a JSON route of its own) with the dashboard mounted under /ops/jobs; listening for real. */
async function mount() {
  const ns = t.client({ jobs: [mail] });
  const dashboard = createDashboard(ns, { basePath: '/ops/jobs', auth });
  app = Fastify();
  app.post('/api/echo', async (req) => ({ got: req.body }));
  await app.register(dashboardPlugin(dashboard));
  const address = await app.listen({ port: 0, host: '127.0.0.1' });
  return { ns, url: address, dashboard };
}

it('serves the dashboard under its prefix in a fastify app, and leaves the app its own routes and body parsing', async () => {
  const { ns, url } = await mount();
  await ns.enqueue(mail, { to: 'a@example.com' });
  const res = await fetch(`${url}/ops/jobs/queues`, { headers: { authorization: carol } });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-security-policy')).toMatch(/script-src 'nonce-[^']+'/);
  const body = await res.text();
  expect(body).toContain('data-queue="mail"');
  // Links and assets carry the prefix.
  expect(body).toContain('href="/ops/jobs/jobs?queue=mail"');
  expect(body).toContain('src="/ops/jobs/assets/app.js"');
  expect((await fetch(`${url}/ops/jobs/assets/app.js`, { headers: { authorization: carol } })).status).toBe(200);
  // Outside the prefix: the app's, not the dashboard's.
  expect((await fetch(`${url}/queues`, { headers: { authorization: carol } })).status).toBe(404);
  const echo = await fetch(`${url}/api/echo`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ a: 1 }) });
  expect(await echo.json()).toEqual({ got: { a: 1 } });
  // No credentials: the dashboard's challenge.
  expect((await fetch(`${url}/ops/jobs/`)).status).toBe(401);
});

it('takes a POST with its CSRF token through fastify (pauses a queue, audited as the signed-in user) and refuses one without', async () => {
  const { ns, url } = await mount();
  await ns.enqueue(mail, { to: 'b@example.com' });
  const page = await (await fetch(`${url}/ops/jobs/queues`, { headers: { authorization: carol } })).text();
  const csrf = /<meta name="csrf-token" content="([^"]+)"/.exec(page)?.[1];
  expect(csrf).toBeTruthy();
  const post = (form: Record<string, string>) =>
    fetch(`${url}/ops/jobs/actions/queues/pause`, {
      method: 'POST',
      redirect: 'manual',
      headers: { authorization: carol, 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
      body: new URLSearchParams(form).toString(),
    });
  const refused = await post({ queue: 'mail', back: '/ops/jobs/queues' });
  expect(refused.status).toBe(403);
  expect(await refused.text()).toContain('missing CSRF token');
  expect((await ns.listQueues()).find((q) => q.name === 'mail')?.paused).toBe(false);
  const done = await post({ queue: 'mail', back: '/ops/jobs/queues', csrf: csrf!, reason: 'mail provider incident' });
  expect(done.status).toBe(303);
  expect(done.headers.get('location')).toMatch(/^\/ops\/jobs\/queues\?flash=/);
  expect((await ns.listQueues()).find((q) => q.name === 'mail')?.paused).toBe(true);
  const [entry] = await ns.listAudit({ target: 'queue:mail', limit: 1 });
  expect(entry).toMatchObject({ actor: 'ops-carol', action: 'pause', reason: 'mail provider incident' });
  // The page it redirects to shows the change.
  const after = await (await fetch(`${url}${done.headers.get('location')!}`, { headers: { authorization: carol } })).text();
  expect(after).toContain('id="resume-mail"');
});
