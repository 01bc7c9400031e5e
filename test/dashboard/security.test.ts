import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { runCli } from '../../src/cli/program.js';
import { checkBind, createDashboard, serveDashboard, type DashboardServer } from '../../src/dashboard/index.js';
import { defineJob, hold } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';

const t = useTestDatabase('dsec');
t.migrateBeforeAll();

const CANARY = 'canary-secret-7d1f0e';
const EVIL = `<script>window.__pwned=1</script>"><img src=x onerror="window.__pwned=2">`;
const evilJob = defineJob({
  kind: 'evil',
  payload: z.object({ note: z.string(), token: z.string() }),
  queue: 'evil',
  maxAttempts: 1,
  run: async (p) => {
    throw new Error(`failed on ${p.note}`);
  },
});
const heldJob = defineJob({ kind: 'review', payload: z.object({ n: z.number() }), queue: 'evil', run: async () => hold('manual review') });

const servers: DashboardServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close()));
});

const users = {
  basic: [
    { name: 'reader', password: 'reader-password', permissions: ['read' as const] },
    { name: 'admin', password: 'admin-password', permissions: ['read' as const, 'act' as const, 'resolve' as const, 'bulk' as const, 'payloads' as const] },
  ],
};
const basic = (u: string, p: string) => `Basic ${Buffer.from(`${u}:${p}`).toString('base64')}`;

async function start(logLines: string[]) {
  const ns = t.client({ jobs: [evilJob, heldJob] });
  const logger = { info: (f: Record<string, unknown>, m: string) => logLines.push(JSON.stringify({ ...f, m })), warn: (f: Record<string, unknown>, m: string) => logLines.push(JSON.stringify({ ...f, m })) };
  const server = await serveDashboard(createDashboard(ns, { auth: users, logger }), { port: 0 });
  servers.push(server);
  return { ns, server, url: server.url.replace(/\/$/, '') };
}

function csrfOf(page: string): string {
  const m = /<meta name="csrf-token" content="([^"]+)"/.exec(page);
  expect(m).not.toBeNull();
  return m![1]!;
}

describe('dashboard security', () => {
  it('refuses a POST without the CSRF token, from another site, or from a read-only user; the admin acts', async () => {
    const logs: string[] = [];
    const { ns, url } = await start(logs);
    const { id } = await ns.enqueue(heldJob, { n: 1 });
    await ns.start();
    await waitFor('held', async () => (await ns.getJob(id)).state === 'held');
    const admin = basic('admin', 'admin-password');
    const page = await (await fetch(`${url}/jobs/${id}`, { headers: { authorization: admin } })).text();
    const token = csrfOf(page);
    const post = (headers: Record<string, string>, body: string) =>
      fetch(`${url}/actions/job/resolve`, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body });
    const form = (csrf?: string) => new URLSearchParams({ id, as: 'completed', reason: 'checked', back: `/jobs/${id}`, ...(csrf ? { csrf } : {}) }).toString();

    expect((await post({ authorization: admin, 'sec-fetch-site': 'same-origin' }, form())).status).toBe(403);
    expect((await post({ authorization: admin, 'sec-fetch-site': 'cross-site' }, form(token))).status).toBe(403);
    expect((await post({ authorization: admin, origin: 'https://evil.example' }, form(token))).status).toBe(403);
    // Another user's token is not this user's.
    const readerPage = await (await fetch(`${url}/jobs/${id}`, { headers: { authorization: basic('reader', 'reader-password') } })).text();
    expect((await post({ authorization: admin, 'sec-fetch-site': 'same-origin' }, form(csrfOf(readerPage)))).status).toBe(403);
    // The read-only user with its own valid token still may not act, and sees no action button.
    expect(readerPage).not.toContain('id="resolve"');
    expect((await post({ authorization: basic('reader', 'reader-password'), 'sec-fetch-site': 'same-origin' }, form(csrfOf(readerPage)))).status).toBe(403);
    expect((await ns.getJob(id)).state).toBe('held');
    // GET never changes anything.
    expect((await fetch(`${url}/actions/job/resolve?${form(token)}`, { headers: { authorization: admin } })).status).toBe(404);

    const ok = await post({ authorization: admin, 'sec-fetch-site': 'same-origin' }, form(token));
    expect(ok.status).toBe(303);
    expect((await ns.getJob(id)).state).toBe('completed');
    expect((await ns.listAudit({ target: `job:${id}` }))[0]).toMatchObject({ actor: 'admin', action: 'resolve-completed', reason: 'checked' });
  });

  it('asks for credentials, and refuses wrong ones', async () => {
    const { url } = await start([]);
    const none = await fetch(`${url}/`);
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toMatch(/^Basic/);
    expect((await fetch(`${url}/`, { headers: { authorization: basic('admin', 'wrong-password') } })).status).toBe(401);
    expect((await fetch(`${url}/healthz`)).status).toBe(200);
  });

  it('renders payloads and errors with markup inert, and shows a canary secret only to a user with the payloads permission', async () => {
    const logs: string[] = [];
    const { ns, url } = await start(logs);
    const { id } = await ns.enqueue(evilJob, { note: EVIL, token: CANARY });
    await ns.start();
    await waitFor('discarded', async () => (await ns.getJob(id)).state === 'discarded');
    const admin = await fetch(`${url}/jobs/${id}`, { headers: { authorization: basic('admin', 'admin-password') } });
    const adminPage = await admin.text();
    expect(adminPage).toContain(CANARY);
    expect(adminPage).not.toContain('<script>window.__pwned');
    expect(adminPage).not.toContain('<img src=x');
    expect(adminPage).toContain('&lt;script&gt;window.__pwned=1&lt;/script&gt;&quot;&gt;&lt;img src=x onerror=');
    // The CSP allows only the dashboard's own, nonced script.
    const csp = admin.headers.get('content-security-policy')!;
    const n = /script-src 'nonce-([^']+)'/.exec(csp)![1]!;
    expect([...adminPage.matchAll(/<script\b[^>]*>/g)].map((m) => m[0])).toEqual([`<script src="/assets/app.js" nonce="${n}">`]);

    const readerRes = await fetch(`${url}/jobs/${id}`, { headers: { authorization: basic('reader', 'reader-password') } });
    const readerPage = await readerRes.text();
    expect(readerPage).not.toContain(CANARY);
    expect(readerPage).toContain('payload-hidden');
    // A search by the secret is refused to nobody, but shows the reader no payload either.
    const search = await (await fetch(`${url}/jobs?q=${encodeURIComponent(`payload.token:${CANARY}`)}`, { headers: { authorization: basic('reader', 'reader-password') } })).text();
    expect(search).toContain(`data-job="${id}"`);
    expect(search.replace(encodeURIComponent(CANARY), '').split(CANARY).length - 1).toBe(1); // only in the search box the reader typed
    for (const res of [admin, readerRes]) for (const [, v] of res.headers) expect(v).not.toContain(CANARY);
    // The dashboard's own log: no payload, no secret, no error message, no query string.
    expect(logs.length).toBeGreaterThan(0);
    for (const line of logs) {
      expect(line).not.toContain(CANARY);
      expect(line).not.toContain('failed on');
      expect(line).not.toContain('payload.token');
    }
  });

  it('refuses to listen beyond loopback without auth: NS_DASHBOARD_NO_AUTH, and exit 2 from the CLI with how to configure it', async () => {
    const ns = t.client();
    // Embedded through the API: the hint names the option of the caller's own code, not a config file it may not have.
    const embedded = await serveDashboard(createDashboard(ns), { port: 0, host: '0.0.0.0' }).then(
      () => undefined,
      (e: unknown) => e as { code: string; hint: string },
    );
    expect(embedded?.code).toBe('NS_DASHBOARD_NO_AUTH');
    expect(embedded?.hint).toContain('createDashboard(ns, { auth })');
    expect(embedded?.hint).not.toContain('nightshift.config.ts');
    const out: string[] = [];
    const err: string[] = [];
    const code = await runCli(['dashboard', '--host', '0.0.0.0', '--port', '0', '--schema', t.schema], {
      out: { write: (s: string) => out.push(s) },
      err: { write: (s: string) => err.push(s) },
      env: { DATABASE_URL: t.url },
      cwd: '/',
    });
    expect(code).toBe(2);
    expect(err.join('')).toContain('NS_DASHBOARD_NO_AUTH');
    expect(err.join('')).toContain('dashboard.auth in nightshift.config.ts');
    expect(err.join('')).not.toContain('createDashboard');
  });

  it('without auth answers only by a loopback name: a page that rebinds its name to 127.0.0.1 gets nothing (DNS rebinding)', async () => {
    const ns = t.client();
    const server = await serveDashboard(createDashboard(ns), { port: 0 });
    const get = (host: string, method = 'GET', path = '/jobs') =>
      new Promise<{ status: number; body: string }>((resolve, reject) => {
        const req = request({ host: '127.0.0.1', port: server.port, path, method, headers: { host } }, (res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c.toString()));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        });
        req.on('error', reject);
        req.end();
      });
    try {
      for (const host of [`127.0.0.1:${server.port}`, `localhost:${server.port}`, `[::1]:${server.port}`]) expect((await get(host)).status).toBe(200);
      const rebound = await get(`evil.example:${server.port}`);
      expect(rebound.status).toBe(421);
      expect(rebound.body).toContain('no authentication');
      expect((await get(`evil.example:${server.port}`, 'POST')).status).toBe(421);
      // A crafted link cannot show its own text as the dashboard's status message (only signed ones show).
      const spoofed = await get(`127.0.0.1:${server.port}`, 'GET', `/jobs?flash=${encodeURIComponent('visit http://evil.example now')}&fs=forged`);
      expect(spoofed.status).toBe(200);
      expect(spoofed.body).not.toContain('visit http://evil.example now');
    } finally {
      await server.close();
    }
    expect(() => checkBind(undefined, { authenticated: false })).not.toThrow();
    expect(() => checkBind('::ffff:127.0.0.1', { authenticated: false })).not.toThrow();
    expect(() => checkBind('10.0.0.5', { authenticated: false })).toThrow(expect.objectContaining({ code: 'NS_DASHBOARD_NO_AUTH' }));
  });
});
