import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { createDashboard, serveDashboard, type DashboardServer } from '../../src/dashboard/index.js';
import { createNightshift, defineJob, defineSchedule, hold, type Nightshift, type NightshiftOptions } from '../../src/index.js';
import { silentLogger } from '../../src/telemetry/logger.js';
import { describeWithBrowser, useBrowser } from '../support/browser.js';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';

const t = useTestDatabase('dbrowser');
t.migrateBeforeAll();
const shots = fileURLToPath(new URL('../../docs/dashboard/', import.meta.url));

// Fails its first attempt only: discarded (one attempt allowed), then a retry completes it.
const ship = defineJob({
  kind: 'order.ship',
  payload: z.object({ orderId: z.string() }),
  queue: 'orders',
  maxAttempts: 1,
  run: async (_p, ctx) => {
    if (ctx.attempt === 1) throw new Error('carrier API answered 503');
  },
});
const review = defineJob({ kind: 'payout.review', payload: z.object({ payoutId: z.string() }), queue: 'payouts', run: async () => hold('MANUAL_REVIEW: amount over limit') });
const report = defineJob({ kind: 'report.nightly', payload: z.object({}).passthrough(), queue: 'reports', run: async () => undefined });
const nightly = defineSchedule({ name: 'nightly-report', cron: '0 3 * * *', job: report, payload: () => ({}) });

describeWithBrowser('the dashboard in a browser', () => {
  const b = useBrowser();
  let worker: Nightshift;
  let api: Nightshift;
  // Clients for the whole file (t.client's are stopped after each test).
  const client = (o: Partial<NightshiftOptions>) => createNightshift({ databaseUrl: t.url, schema: t.schema, logger: silentLogger(), ...o });
  let server: DashboardServer;
  let page: Page;
  let base: string;

  beforeAll(async () => {
    mkdirSync(shots, { recursive: true });
    worker = client({ jobs: [ship, review, report], schedules: [nightly], concurrency: 8 });
    await worker.start();
    // As `nightshift dashboard` makes it: the config's definitions, never started, a small pool, a statement timeout.
    api = client({ jobs: [ship, review, report], schedules: [nightly], statementTimeoutMs: 5_000, maxConnections: 3 });
    const dashboard = createDashboard(api, { auth: { basic: [{ name: 'ops-alice', password: 'alice-password', permissions: ['read', 'act', 'resolve', 'bulk', 'payloads'] }] } });
    server = await serveDashboard(dashboard, { port: 0 });
    base = server.url.replace(/\/$/, '');
    const context = await b.browser().newContext({ httpCredentials: { username: 'ops-alice', password: 'alice-password' }, viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    page.on('dialog', (d) => void d.accept());
    // Live updates every second in this test's tab.
    await page.addInitScript("localStorage.setItem('ns-rate', '1000')");
  });
  afterAll(async () => {
    await server?.close();
    await worker?.stop();
    await api?.stop();
  });

  const shot = (name: string) => page.screenshot({ path: `${shots}${name}.png`, fullPage: false });

  it('finds a job by a payload field and retries it once discarded; the page updates by itself', async () => {
    await worker.enqueueMany(ship, [{ orderId: 'o-41' }, { orderId: 'o-42' }, { orderId: 'o-43' }]);
    await waitFor('three discarded', async () => (await worker.countJobs({ kind: 'order.ship', state: 'discarded' })) === 3);
    await page.goto(`${base}/jobs`);
    await page.fill('input[name=q]', 'payload.orderId:o-42');
    await page.click('#search');
    expect(new URL(page.url()).searchParams.get('q')).toBe('payload.orderId:o-42');
    const rows = page.locator('tr[data-job]');
    expect(await rows.count()).toBe(1);
    await shot('jobs');
    await rows.first().locator('a').click();
    await page.waitForSelector('#retry', { timeout: 10_000 }).catch(async (err) => {
      throw new Error(`${String(err)}\n${await page.locator('main').innerHTML()}`);
    });
    expect(await page.locator('[data-live=state]').textContent()).toContain('discarded');
    expect(await page.locator('.error-message').first().textContent()).toContain('carrier API answered 503');
    expect(await page.locator('#payload').textContent()).toContain('o-42');
    await shot('job');
    await page.fill('form:has(#retry) input[name=reason]', 'carrier is back');
    await page.click('#retry');
    await page.waitForSelector('.flash', { timeout: 10_000 }).catch(async (err) => {
      throw new Error(`${String(err)}\n${page.url()}\n${await page.content()}`);
    });
    expect(await page.locator('.flash').textContent()).toContain('retried');
    // No reload (the page's script swaps the live regions; the CSP forbids evaluating strings, so the test reads the DOM).
    const url = page.url();
    await waitFor('the live region to say completed', async () => (await page.locator('[data-live=state]').textContent())?.includes('completed'));
    await waitFor('a live update', async () => Number(await page.locator('body').getAttribute('data-updates')) >= 1);
    expect(page.url()).toBe(url);
  });

  it('resolves a held job with a reason', async () => {
    const { id } = await worker.enqueue(review, { payoutId: 'p-7' });
    await waitFor('held', async () => (await worker.getJob(id)).state === 'held');
    await page.goto(`${base}/jobs?state=held`);
    await page.click(`tr[data-job="${id}"] a`);
    await page.selectOption('#resolve-form select[name=as]', 'completed');
    await page.fill('#resolve-form input[name=reason]', 'paid by hand, ticket OPS-12');
    await page.click('#resolve');
    await page.waitForSelector('.flash');
    expect((await worker.getJob(id)).state).toBe('completed');
    expect(await page.locator('[data-live=state]').textContent()).toContain('completed');
  });

  it('bulk-retries every job matching a filter in the background and shows its progress', async () => {
    await worker.enqueueMany(
      ship,
      Array.from({ length: 40 }, (_, i) => ({ orderId: `bulk-${i}` })),
    );
    await waitFor('40 more discarded', async () => (await worker.countJobs({ kind: 'order.ship', state: 'discarded' })) >= 42);
    await page.goto(`${base}/jobs?state=discarded&kind=order.ship`);
    await page.selectOption('#bulk select[name=scope]', 'filter');
    await page.fill('#bulk input[name=reason]', 'carrier outage over');
    await page.click('#bulk-start');
    await page.waitForURL(/\/bulk/);
    await waitFor('the bulk action to be done, on the page', async () => (await page.locator('.bulk-state').first().textContent())?.startsWith('done'));
    expect(Number(await page.locator('.bulk-done').first().textContent())).toBe(42);
    await shot('bulk');
    await waitFor('all completed', async () => (await worker.countJobs({ kind: 'order.ship', state: 'discarded' })) === 0);
  });

  it('pauses a queue and triggers a schedule', async () => {
    await page.goto(`${base}/queues`);
    await page.click('#pause-orders');
    await page.waitForSelector('#resume-orders');
    expect((await worker.listQueues()).find((q) => q.name === 'orders')?.paused).toBe(true);
    await shot('queues');
    await page.goto(`${base}/schedules`);
    await page.click('#trigger-nightly-report');
    await page.waitForSelector('.flash');
    expect(await page.locator('.flash').textContent()).toContain('triggered nightly-report');
    await waitFor('the triggered report ran', async () => (await worker.countJobs({ kind: 'report.nightly', state: 'completed' })) === 1);
    await shot('schedules');
  });

  it('shows every action in the audit log with the signed-in user as actor, and walks the other pages', async () => {
    await page.goto(`${base}/audit`);
    const text = (await page.locator('[data-live=audit]').textContent()) ?? '';
    for (const action of ['retry', 'resolve-completed', 'pause', 'trigger']) expect(text).toContain(action);
    expect(text).toContain('ops-alice');
    expect(text).toContain('carrier outage over');
    await shot('audit');
    // The workers' aggregates reach the table within a flush (10 s): then the charts have lines.
    await waitFor('aggregates written', async () => (await api.jobStats({ range: 'hour' })).some((p) => p.completed > 0));
    for (const [path, name, expectText] of [
      ['/', 'overview', 'Problem queues'],
      ['/processes', 'processes', String(process.pid)],
      ['/leaders', 'leaders', 'nightshift:maintenance'],
      ['/streams', 'streams', 'Redis'],
      ['/budget', 'budget', 'max_connections'],
      ['/alerts', 'alerts', 'History'],
    ] as const) {
      await page.goto(`${base}${path}`);
      expect(await page.locator('main').textContent()).toContain(expectText);
      await shot(name);
    }
    // The overview's charts are images drawn on the server.
    await page.goto(`${base}/`);
    expect(await page.locator('figure.chart img').count()).toBe(2);
  });
});
