import { beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';
import { cliInProcess as cli, startInProcess } from './in-process.js';

// The CLI in this process (runCli); what only the real binary shows — signals, exit, the bin
// file — is in binary.test.ts.

const t = useTestDatabase('cli');
// The config (test/fixtures/cli-app) takes its schema from NS_SCHEMA, which it reads from process.env.
process.env.NS_SCHEMA = t.schema;
const env = () => ({ DATABASE_URL: t.url });
const run = (args: string[], extra: Record<string, string | undefined> = {}) => cli(args, { env: { ...env(), ...extra } });

beforeAll(async () => {
  const r = await run(['migrate']);
  expect(r.code, r.stderr).toBe(0);
});

async function jobState(id: string): Promise<string> {
  return (await t.sql.query(`SELECT state FROM "${t.schema}".jobs_all WHERE id = $1`, [id])).rows[0]?.state;
}

describe('nightshift CLI', () => {
  it('migrate reports the schema up to date on a second run, and --json', async () => {
    const r = await run(['migrate', '--json']);
    expect(r.code).toBe(0);
    expect(JSON.parse(r.stdout)).toMatchObject({ schema: t.schema, applied: [] });
  });

  it('fails with exit 2 and a hint when no database URL is given', async () => {
    const r = await cli(['jobs', 'list'], { env: { DATABASE_URL: undefined } });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('no database URL');
    expect(r.stderr).toContain('DATABASE_URL');
  });

  it('takes the database from --database-url too', async () => {
    const r = await cli(['--database-url', t.url, 'queues', 'list', '--json'], { env: { DATABASE_URL: undefined } });
    expect(r.code, r.stderr).toBe(0);
    expect(Array.isArray(JSON.parse(r.stdout))).toBe(true);
  });

  it('exits 2 on an unknown command or flag', async () => {
    expect((await run(['frobnicate'])).code).toBe(2);
    expect((await run(['jobs', 'list', '--colour'])).code).toBe(2);
  });

  it('enqueue validates the payload: bad JSON, schema violations and unknown kinds exit 2 and write nothing', async () => {
    const before = (await t.sql.query(`SELECT count(*)::int AS n FROM "${t.schema}".jobs_all`)).rows[0].n;
    const badJson = await run(['enqueue', 'send-email', '--payload', '{to: x}']);
    expect(badJson.code).toBe(2);
    expect(badJson.stderr).toContain('not valid JSON');
    const invalid = await run(['enqueue', 'send-email', '--payload', '{"to":"not-an-email"}']);
    expect(invalid.code).toBe(2);
    expect(invalid.stderr).toContain('NS_PAYLOAD_INVALID');
    const unknown = await run(['enqueue', 'send-emial', '--payload', '{}']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toContain('NS_UNKNOWN_KIND');
    const badDelay = await run(['enqueue', 'send-email', '--payload', '{"to":"a@b.co"}', '--delay-ms', 'soon']);
    expect(badDelay.code).toBe(2);
    expect((await t.sql.query(`SELECT count(*)::int AS n FROM "${t.schema}".jobs_all`)).rows[0].n).toBe(before);
  });

  it('enqueue writes a job with options, and jobs list/show display it', async () => {
    const r = await run(['enqueue', 'send-email', '--payload', '{"to":"ada@example.com"}', '--priority', '-5', '--delay-ms', '3600000', '--dedupe-key', 'welcome:ada', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const { id, deduped } = JSON.parse(r.stdout);
    expect(deduped).toBe(false);
    const again = await run(['enqueue', 'send-email', '--payload', '{"to":"ada@example.com"}', '--dedupe-key', 'welcome:ada']);
    expect(again.stdout).toContain(`job ${id} (deduped`);
    const list = JSON.parse((await run(['jobs', 'list', '--kind', 'send-email', '--json'])).stdout);
    expect(list[0]).toMatchObject({ id, kind: 'send-email', queue: 'mail', priority: -5, state: 'available' });
    const human = await run(['jobs', 'list', '--kind', 'send-email']);
    expect(human.stdout).toMatch(/id\s+kind\s+queue\s+state/);
    expect(human.stdout).toContain('send-email');
    const show = await run(['jobs', 'show', id]);
    expect(show.stdout).toContain('dedupe key  welcome:ada');
    expect((await run(['jobs', 'show', '99999999'])).code).toBe(1);
  });

  it('enqueues a kind the config does not define through the SQL function', async () => {
    await t.sql.query(`INSERT INTO "${t.schema}".kinds (kind, queue, priority, max_attempts, at_most_once) VALUES ('external-kind', 'ext', 0, 3, false)`);
    const r = await run(['enqueue', 'external-kind', '--payload', '{"a":1}', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const { id } = JSON.parse(r.stdout);
    expect((await t.sql.query(`SELECT queue, max_attempts FROM "${t.schema}".jobs_all WHERE id = $1`, [id])).rows[0]).toEqual({ queue: 'ext', max_attempts: 3 });
  });

  it('worker refuses an unknown role with exit 2, listing the valid roles', async () => {
    const r = await run(['worker', '--roles', 'outbox']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('NS_UNKNOWN_ROLE');
    expect(r.stderr).toContain('valid roles: api, outbox-worker, psp-worker, classifier');
    expect(r.stderr).toContain('did you mean "outbox-worker"');
    const fromEnv = await run(['worker'], { NIGHTSHIFT_ROLES: 'api,invoice-expiry' });
    expect(fromEnv.code).toBe(2);
    expect(fromEnv.stderr).toContain('"invoice-expiry"');
  });

  it('worker fails closed when a role needs an environment variable that is missing', async () => {
    const r = await run(['worker', '--roles', 'classifier'], { OPENROUTER_API_KEY: undefined });
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('NS_MISSING_ENV');
    expect(r.stderr).toContain('OPENROUTER_API_KEY (required by job classify-message)');
  });

  it('reports every config mistake at once with paths and did-you-mean, exit 2', async () => {
    const r = await run(['--config', 'bad.config.ts', 'jobs', 'list']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('NS_CONFIG_INVALID');
    expect(r.stderr).toContain('worker.concurency: unknown key; did you mean "concurrency"?');
    expect(r.stderr).toContain('roles.api.jobs.0: unknown job kind "only-jbo"; did you mean "only-job"?');
    const missing = await run(['--config', 'nope.config.ts', 'jobs', 'list']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toContain('no such file');
  });

  it('worker runs its role, registers itself, hosts its daemon, and stops cleanly when asked to (SIGTERM in the binary)', async () => {
    const worker = startInProcess(['worker', '--roles', 'outbox-worker'], { env: env() });
    try {
      await worker.waitForLine('started');
      const r = await run(['enqueue', 'outbox-event', '--payload', '{"action":"post_pending","id":"tx-1"}', '--json']);
      const { id } = JSON.parse(r.stdout);
      await waitFor('the worker to complete the job', async () => (await jobState(id)) === 'completed');
      // A kind outside the role stays untouched.
      const other = JSON.parse((await run(['enqueue', 'send-email', '--payload', '{"to":"b@example.com"}', '--json'])).stdout).id;
      const workers = await run(['workers', '--json']);
      // The worker runs in this process; the short commands do not register themselves.
      const me = JSON.parse(workers.stdout).find((p: { pid: number }) => p.pid === process.pid);
      expect(me).toMatchObject({ roles: ['outbox-worker'], info: { kinds: ['outbox-event'], queues: ['outbox'] } });
      await waitFor('the daemon to be elected', async () =>
        JSON.parse((await run(['daemons', '--json'])).stdout).some((l: { name: string; status: string }) => l.name === 'daemon:refresh-seeds' && l.status === 'leading'),
      );
      expect(await jobState(other)).toBe('available');
      worker.stop('SIGTERM');
      expect((await worker.ended).code).toBe(0);
      expect(worker.output()).toContain('SIGTERM: stopping (grace 2000 ms)');
      // A clean stop removes the process from the registry and releases the daemon's lease.
      expect(JSON.parse((await run(['workers', '--json'])).stdout).some((p: { pid: number }) => p.pid === process.pid)).toBe(false);
      const daemons = JSON.parse((await run(['daemons', '--json'])).stdout);
      expect(daemons.find((l: { name: string }) => l.name === 'daemon:refresh-seeds')).toMatchObject({ status: 'no leader (lease expired)' });
    } finally {
      await worker.close();
    }
  });

  it('jobs resolve, retry and cancel, with bulk actions asking for --yes and supporting --dry-run', async () => {
    const held = JSON.parse((await run(['enqueue', 'outbox-event', '--payload', '{"action":"void_pending","id":"review-1"}', '--json'])).stdout).id;
    const worker = startInProcess(['worker', '--roles', 'outbox-worker'], { env: env() });
    try {
      await worker.waitForLine('started');
      await waitFor('the job to be held', async () => (await jobState(held)) === 'held');
    } finally {
      await worker.close();
    }
    const bad = await run(['jobs', 'resolve', held, '--as', 'maybe']);
    expect(bad.code).toBe(2);
    const resolved = await run(['jobs', 'resolve', held, '--as', 'failed', '--reason', 'voided at the PSP', '--actor', 'ops-anna']);
    expect(resolved.code, resolved.stderr).toBe(0);
    expect(await jobState(held)).toBe('discarded');
    const notAllowed = await run(['jobs', 'cancel', held]);
    expect(notAllowed.code).toBe(1);
    expect(notAllowed.stderr).toContain('NS_INVALID_TRANSITION');
    const noConfirm = await run(['jobs', 'retry', '--kind', 'outbox-event', '--state', 'discarded']);
    expect(noConfirm.code).toBe(2);
    expect(noConfirm.stderr).toContain('--yes');
    const dry = await run(['jobs', 'retry', '--kind', 'outbox-event', '--state', 'discarded', '--dry-run', '--json']);
    expect(JSON.parse(dry.stdout)).toEqual({ dryRun: true, matched: 1 });
    const bulk = await run(['jobs', 'retry', '--kind', 'outbox-event', '--state', 'discarded', '--yes', '--reason', 'PSP back']);
    expect(bulk.code, bulk.stderr).toBe(0);
    expect(bulk.stdout).toContain('retried 1 job(s)');
    expect(bulk.stderr).toContain('retry: 1/1');
    expect(await jobState(held)).toBe('available');
    const cancel = await run(['jobs', 'cancel', held, '--reason', 'no longer needed']);
    expect(cancel.stdout).toContain(`job ${held}: cancelled`);
    const audit = JSON.parse((await run(['audit', '--target', `job:${held}`, '--json'])).stdout);
    // Newest first, back to the CLI's enqueue (audited too).
    expect(audit.map((a: { action: string }) => a.action)).toEqual(['cancel', 'retry', 'resolve-failed', 'enqueue']);
    expect(audit[2]).toMatchObject({ actor: 'ops-anna', reason: 'voided at the PSP' });
  });

  it('queues pause, resume and list', async () => {
    expect((await run(['queues', 'pause', 'mail', '--reason', 'provider outage'])).code).toBe(0);
    let queues = JSON.parse((await run(['queues', 'list', '--json'])).stdout);
    expect(queues.find((q: { name: string }) => q.name === 'mail')).toMatchObject({ paused: true });
    expect((await run(['queues', 'resume', 'mail'])).code).toBe(0);
    queues = JSON.parse((await run(['queues', 'list', '--json'])).stdout);
    expect(queues.find((q: { name: string }) => q.name === 'mail')).toMatchObject({ paused: false });
    expect((await run(['queues', 'pause', 'bad queue!'])).code).toBe(2);
    expect((await run(['queues', 'list'])).stdout).toMatch(/queue\s+paused\s+available/);
  });

  it('stats and budget', async () => {
    const stats = JSON.parse((await run(['stats', '--json'])).stdout);
    expect(stats.some((s: { kind: string }) => s.kind === 'send-email')).toBe(true);
    const ok = await run(['budget', '--replicas', '2', '--json']);
    expect(ok.code).toBe(0);
    expect(JSON.parse(ok.stdout)).toMatchObject({ replicas: 2, perProcess: { pool: 10, listener: 1, total: 11 }, fleet: 22, ok: true });
    // Over budget is a configuration error: exit 2, as a worker refusing to start over budget.
    const over = await run(['budget', '--replicas', '1000']);
    expect(over.code).toBe(2);
    expect(over.stdout).toContain('OVER BUDGET');
    expect((await run(['budget', '--replicas', 'many'])).code).toBe(2);
  });
});

describe('nightshift schedules', () => {
  it('lists schedules with next runs, triggers one with a payload, pauses, resumes and shows ticks', async () => {
    const list = JSON.parse((await run(['schedules', 'list', '--json', '--next', '2'])).stdout);
    const nightly = list.find((s: { name: string }) => s.name === 'nightly-digest');
    expect(nightly).toMatchObject({ cron: '0 3 * * *', tz: 'Europe/Berlin', kind: 'daily-digest' });
    expect(nightly.nextRuns).toHaveLength(2);
    const human = await run(['schedules', 'list']);
    expect(human.stdout).toMatch(/schedule\s+timing\s+job\s+next runs/);
    const bad = await run(['schedules', 'trigger', 'nightly-digest', '--payload', '{"day": 5}']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('NS_PAYLOAD_INVALID');
    const trig = await run(['schedules', 'trigger', 'nightly-digest', '--payload', '{"day":"2026-11-29"}', '--json', '--reason', 'rerun after fix']);
    expect(trig.code, trig.stderr).toBe(0);
    const { jobId } = JSON.parse(trig.stdout);
    expect((await t.sql.query(`SELECT payload FROM "${t.schema}".jobs_all WHERE id = $1`, [jobId])).rows[0].payload).toEqual({ day: '2026-11-29' });
    const unknown = await run(['schedules', 'trigger', 'nightly-digset']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('did you mean "nightly-digest"');
    expect((await run(['schedules', 'pause', 'nightly-digest'])).stdout).toContain('paused');
    expect(JSON.parse((await run(['schedules', 'list', '--json'])).stdout).find((s: { name: string }) => s.name === 'nightly-digest').paused).toBe(true);
    expect((await run(['schedules', 'resume', 'nightly-digest'])).stdout).toContain('resumed');
    const ticks = JSON.parse((await run(['schedules', 'ticks', 'nightly-digest', '--json'])).stdout);
    expect(ticks[0]).toMatchObject({ outcome: 'manual', jobId });
  });

  it('rejects an invalid cron expression and an unknown time zone at start-up, naming the field, exit 2', async () => {
    const r = await run(['--config', 'bad-cron.config.ts', 'worker']);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('NS_CONFIG_INVALID');
    expect(r.stderr).toMatch(/cron/);
    const zone = await run(['--config', 'bad-cron.config.ts', 'schedules', 'list']);
    expect(zone.code).toBe(2);
  });
});
