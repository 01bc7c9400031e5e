import { mkdirSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { z } from 'zod';
import { createDashboard, serveDashboard, type DashboardServer } from '../../src/dashboard/index.js';
import { createNightshift, defineCheck, defineJob, definePipeline, type Nightshift, type NightshiftOptions } from '../../src/index.js';
import { silentLogger } from '../../src/telemetry/logger.js';
import { tempStore } from '../pipelines/support.js';
import { describeWithBrowser, useBrowser } from '../support/browser.js';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';

const t = useTestDatabase('dbrowserops');
t.migrateBeforeAll();
const shots = fileURLToPath(new URL('../../docs/dashboard/', import.meta.url));

// The settlement's `settle` step fails until the ledger is back (one attempt per step): the run fails, a rerun succeeds.
let ledgerDown = true;
const { store } = tempStore();
const settlement = definePipeline({ name: 'settlement', store, maxAttempts: 1, queue: 'settlement' })
  .step('freeze', async () => ({ pools: 3 }))
  .map('settle', { needs: ['freeze'], items: ({ freeze }) => Array.from({ length: freeze.pools }, (_, i) => i), itemKey: (n) => `pool-${n}` }, async (_ctx, n) => {
    if (ledgerDown && n === 1) throw new Error('ledger RPC timed out');
    return n * 100;
  })
  .step('report', { needs: ['settle'] }, async (ctx) => {
    const total = ctx.needs.settle.reduce((s, r) => s + r.value, 0);
    await ctx.artifact('totals.json', { total }, { contentType: 'application/json' });
    return { total };
  })
  .step('notify', { needs: ['report'], optional: true, effect: true }, async () => 'sent');

// A check that turns bad when the test says so.
let backlogBad = false;
const backlog = defineCheck({
  name: 'payout-backlog',
  every: '1h',
  run: async () => (backlogBad ? { status: 'critical', message: '120 payouts waiting: is the payout worker running?' } : { status: 'ok', message: 'no payout backlog' }),
});

// One call per account at a time; the handler waits for the test to let it finish.
let release: () => void = () => undefined;
const gate = new Promise<void>((r) => (release = r));
const provider = defineJob({
  kind: 'provider.call',
  payload: z.object({ account: z.string() }),
  queue: 'provider',
  concurrency: { limit: 1, key: (p: { account: string }) => p.account },
  run: async () => gate,
});
// A job no process has a handler for (only the dashboard's client defines it): due, under no limit — not limited, so the page says to look at the workers.
const orphan = defineJob({ kind: 'orphan.task', payload: z.object({}), queue: 'nobody-claims', run: async () => undefined });

describeWithBrowser('the dashboard in a browser: pipelines, alerts, limits', () => {
  const b = useBrowser();
  let worker: Nightshift;
  let limited: Nightshift;
  let api: Nightshift;
  const client = (o: Partial<NightshiftOptions>) => createNightshift({ databaseUrl: t.url, schema: t.schema, logger: silentLogger(), ...o });
  const defs = { pipelines: [settlement], checks: [backlog], watchdog: { builtins: false, notifiers: [] } } satisfies Partial<NightshiftOptions>;
  let server: DashboardServer;
  let page: Page;
  let base: string;

  beforeAll(async () => {
    mkdirSync(shots, { recursive: true });
    // The limited kind runs in a process of its own: on main, a worker whose kinds include a
    // limited one never claims pipeline steps in another queue (reported to the lead).
    worker = client({ ...defs, concurrency: 8 });
    limited = client({ jobs: [provider], concurrency: 4 });
    await Promise.all([worker.start(), limited.start()]);
    api = client({ ...defs, jobs: [provider, orphan], statementTimeoutMs: 5_000, maxConnections: 3 });
    const dashboard = createDashboard(api, { auth: { basic: [{ name: 'ops-bob', password: 'bob-password', permissions: ['read', 'act', 'payloads'] }] } });
    server = await serveDashboard(dashboard, { port: 0 });
    base = server.url.replace(/\/$/, '');
    const context = await b.browser().newContext({ httpCredentials: { username: 'ops-bob', password: 'bob-password' }, viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
    page.on('dialog', (d) => void d.accept());
    await page.addInitScript("localStorage.setItem('ns-rate', '1000')");
  });
  afterAll(async () => {
    release();
    await server?.close();
    await worker?.stop();
    await limited?.stop();
    await api?.stop();
  });

  const shot = (name: string) => page.screenshot({ path: `${shots}${name}.png`, fullPage: false });
  const main = async () => (await page.locator('main').textContent()) ?? '';

  it('reruns a failed pipeline from its page and watches it succeed; verifies its artifacts', async () => {
    await worker.pipelines.start(settlement, '2024-06-01');
    await waitFor('the run to fail', async () => (await worker.pipelines.getRun('settlement', '2024-06-01')).state === 'failed');
    await page.goto(`${base}/pipelines`);
    await page.selectOption('select[name=pipeline]', 'settlement');
    await page.fill('input[name=key]', '2024-06-01');
    await page.click('#filter-runs');
    expect(new URL(page.url()).searchParams.get('key')).toBe('2024-06-01');
    const row = page.locator('tr[data-run]');
    expect(await row.count()).toBe(1);
    expect(await row.locator('.run-state').textContent()).toContain('failed');
    await shot('pipelines');
    await row.locator('a').first().click();
    // The step graph: each step a node with its state; the failed fan-out says which item and why.
    expect(await page.locator('.step-graph [data-step]').count()).toBe(4);
    expect(await page.locator('.step-graph [data-step=freeze]').getAttribute('data-state')).toBe('succeeded');
    expect(await page.locator('.step-graph [data-step=settle]').getAttribute('data-state')).toBe('failed');
    expect(await page.locator('.step-graph [data-step=settle] title').textContent()).toContain('settle: failed');
    expect(await page.locator('#step-settle').textContent()).toContain('ledger RPC timed out');
    ledgerDown = false;
    await page.fill('form:has(#rerun) input[name=reason]', 'ledger is back');
    await page.click('#rerun');
    await page.waitForSelector('.flash');
    expect(await page.locator('.flash').textContent()).toContain('rerun of settlement 2024-06-01');
    const url = page.url();
    await waitFor('the live region to say succeeded', async () => (await page.locator('[data-live=run-state]').textContent())?.includes('succeeded'));
    expect(page.url()).toBe(url);
    await waitFor('the graph to show every step ended', async () => (await page.locator('.step-graph [data-state=succeeded]').count()) === 4);
    expect((await worker.pipelines.getRun('settlement', '2024-06-01')).state).toBe('succeeded');
    await page.reload();
    await page.click('#verify');
    await page.waitForSelector('.flash');
    expect(await page.locator('.flash').textContent()).toContain('all match');
    expect(await page.locator('[data-artifact="totals.json"]').count()).toBe(1);
    await page.goto(`${base}/audit?target=pipeline:settlement:2024-06-01`);
    const audit = await main();
    expect(audit).toContain('pipeline-rerun');
    expect(audit).toContain('pipeline-verify');
    expect(audit).toContain('ledger is back');
    expect(audit).toContain('ops-bob');
  });

  it('cleans up a finished dry run from its page and lands on the runs of its key', async () => {
    const { run } = await worker.pipelines.start(settlement, '2024-06-02', undefined, { dryRun: true });
    await waitFor('the dry run to end', async () => (await worker.pipelines.getRunById(run.id)).state === 'succeeded');
    await page.goto(`${base}/pipelines/runs/${run.id}`);
    // The effect step is skipped in a dry run.
    expect(await page.locator('.step-graph [data-step=notify]').getAttribute('data-state')).toBe('skipped');
    await shot('pipeline-run');
    await page.click('#cleanup');
    await page.waitForSelector('.flash');
    expect(await page.locator('.flash').textContent()).toContain(`removed dry run ${run.id}`);
    expect(new URL(page.url()).pathname).toBe('/pipelines');
    await expect(worker.pipelines.getRunById(run.id)).rejects.toMatchObject({ code: 'NS_PIPELINE_RUN_NOT_FOUND' });
  });

  it('acknowledges an alert of a check that turned bad, and the ack is in the audit log', async () => {
    backlogBad = true;
    await worker.runCheck('payout-backlog');
    const [alert] = await worker.listAlerts({ open: true });
    expect(alert?.check).toBe('payout-backlog');
    await page.goto(`${base}/alerts`);
    expect(await page.locator(`tr[data-alert="${alert!.id}"]`).textContent()).toContain('120 payouts waiting');
    await page.fill(`tr[data-alert="${alert!.id}"] input[name=reason]`, 'on it, restarting the payout worker');
    await shot('alert-ack');
    await page.click(`#ack-${alert!.id}`);
    await page.waitForSelector('.flash');
    expect(await page.locator('.flash').textContent()).toContain(`acknowledged alert ${alert!.id}`);
    expect(await page.locator(`tr[data-alert="${alert!.id}"]`).textContent()).toContain('by ops-bob');
    expect((await worker.listAlerts({ open: true }))[0]?.acknowledgedBy).toBe('ops-bob');
    await page.goto(`${base}/audit?target=alert:${alert!.id}`);
    const audit = await main();
    expect(audit).toContain('alert-ack');
    expect(audit).toContain('ops-bob');
    expect(audit).toContain('on it, restarting the payout worker');
  });

  it('tells a job waiting for a full limit from one that waits for nothing', async () => {
    const first = await limited.enqueue(provider, { account: 'acct-9' });
    await waitFor('the first call running', async () => (await limited.getJob(first.id)).state === 'running');
    const second = await limited.enqueue(provider, { account: 'acct-9' });
    const lone = await api.enqueue(orphan, {});
    await waitFor('the second call counted as waiting', async () => (await limited.listLimits()).some((l) => l.waiting === 1 && l.fullKeys === 1));
    await page.goto(`${base}/limits`);
    const [limit] = await limited.listLimits();
    const row = page.locator(`tr[data-limit="${limit!.name}"]`);
    expect(await row.locator('.limit-in-use').textContent()).toContain('1');
    expect(await row.locator('.limit-waiting').textContent()).toBe('1');
    expect(await row.locator('.limit-status').textContent()).toContain('limited, not stuck');
    expect(await row.textContent()).toContain('acct-9');
    await shot('limits');
    await page.goto(`${base}/jobs/${second.id}`);
    expect(await page.locator('#limit-verdict').getAttribute('data-limited')).toBe('true');
    expect(await page.locator('#limit-verdict').textContent()).toContain(`Waiting for limit ${limit!.name} (key acct-9) (full)`);
    await page.goto(`${base}/jobs/${lone.id}`);
    expect(await page.locator('#limit-verdict').getAttribute('data-limited')).toBe('false');
    expect(await page.locator('#limit-verdict').textContent()).toContain('not waiting for a limit');
    release();
    await waitFor('both calls completed', async () => (await limited.getJob(second.id)).state === 'completed');
    await page.goto(`${base}/limits`);
    expect(await page.locator(`tr[data-limit="${limit!.name}"] .limit-status`).textContent()).toContain('room');
  });
});
