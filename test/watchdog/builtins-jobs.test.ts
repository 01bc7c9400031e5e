import { drain } from 'nightshift/testing';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob, discard, hold, type CheckRunReport, type NightshiftOptions } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';
import { startScript } from '../support/processes.js';
import { waitFor } from '../support/wait.js';

// Each built-in check about jobs fires on a real condition made here, and resolves when it is mended.
const t = useTestDatabase('wdjobs');
t.migrateBeforeAll();
const q = () => `"${t.schema}"`;

const subject = (r: CheckRunReport, s: string) => r.results.find((x) => x.subject === s);
const alertOf = async (check: string, s: string) =>
  (await t.sql.query(`SELECT level, resolved_at FROM ${q()}.alerts WHERE check_name = $1 AND subject = $2 ORDER BY id DESC LIMIT 1`, [check, s])).rows[0] as
    { level: string; resolved_at: Date | null } | undefined;
const watchdog = (builtins: NonNullable<NightshiftOptions['watchdog']>['builtins'], jobs: NightshiftOptions['jobs'] = []) => t.client({ jobs, watchdog: { builtins } });

describe('built-in checks about jobs', () => {
  it('nightshift.queue-lag: the oldest due job of a queue waited too long; resolves when workers drain it', async () => {
    const slowpoke = defineJob({ kind: 'slowpoke', queue: 'lagging', payload: z.object({}), run: async () => {} });
    const wd = watchdog({ queueLag: { warningMs: 1_000, criticalMs: 3_600_000 } }, [slowpoke]);
    const { id } = await wd.enqueue(slowpoke, {});
    await waitFor(
      'the job to be due for over a second (database clock)',
      async () => (await t.sql.query(`SELECT now() - run_at > interval '1 second' AS late FROM ${q()}.jobs_all WHERE id = $1`, [id])).rows[0].late,
    );
    const bad = await wd.runCheck('nightshift.queue-lag');
    expect(subject(bad, 'lagging')).toMatchObject({ status: 'warning', message: expect.stringContaining('queue "lagging": the oldest due job has waited') });
    expect(subject(bad, 'lagging')!.message).toContain('nightshift workers');
    expect(await alertOf('nightshift.queue-lag', 'lagging')).toMatchObject({ level: 'warning', resolved_at: null });
    // Mended: a worker for the queue runs the job.
    const worker = t.client({ jobs: [slowpoke], pollIntervalMs: 50 });
    await worker.start();
    await waitFor('the job to run', async () => (await worker.getJob(id)).state === 'completed');
    const good = await wd.runCheck('nightshift.queue-lag');
    expect(subject(good, 'lagging')).toBeUndefined();
    expect(good.alerts).toMatchObject([{ subject: 'lagging', event: 'resolved' }]);
  });

  it('nightshift.unrunnable-kinds: jobs of a kind no live process runs; resolves once a process hosting it runs them', async () => {
    const orphan = defineJob({ kind: 'orphan', payload: z.object({}), run: async () => {} });
    const other = defineJob({ kind: 'other', payload: z.object({}), run: async () => {} });
    const wd = watchdog({ unrunnableKinds: { graceMs: 0 } }, [orphan]);
    // A live process that runs another kind on the same queue.
    const busy = t.client({ jobs: [other], heartbeatMs: 500 });
    await busy.start();
    const { id } = await wd.enqueue(orphan, {});
    const bad = await wd.runCheck('nightshift.unrunnable-kinds');
    expect(subject(bad, 'orphan@default')).toMatchObject({ status: 'critical', message: expect.stringContaining('no live process runs that kind on that queue') });
    expect(subject(bad, 'other@default')).toBeUndefined();
    const host = t.client({ jobs: [orphan], pollIntervalMs: 50 });
    await host.start();
    await waitFor('the orphan to run', async () => (await host.getJob(id)).state === 'completed');
    expect((await wd.runCheck('nightshift.unrunnable-kinds')).alerts).toMatchObject([{ subject: 'orphan@default', event: 'resolved' }]);
  });

  it('nightshift.expired-leases: a killed worker’s running job that nobody rescues; resolves when maintenance rescues it', async () => {
    const wd = watchdog({ expiredLeases: { graceMs: 0 } });
    const blocker = defineJob({ kind: 'blocker', queue: 'blocking', payload: z.object({}), run: async () => {} });
    const { id } = await t.client({ jobs: [blocker] }).enqueue(blocker, {});
    const member = startScript('test/watchdog/fixtures/fleet-member.ts', { DATABASE_URL: t.url, NS_SCHEMA: t.schema, NS_BLOCKING: '1' });
    await member.waitForLine(`running ${id}`);
    member.kill('SIGKILL');
    await member.exited;
    await waitFor('the lease to expire (database clock)', async () => (await t.sql.query(`SELECT lease_expires_at < now() AS gone FROM ${q()}.jobs_all WHERE id = $1`, [id])).rows[0].gone);
    const bad = await wd.runCheck('nightshift.expired-leases');
    expect(bad.results).toMatchObject([{ subject: '', status: 'critical', details: { count: 1, ids: [id] } }]);
    expect(bad.results[0]!.message).toContain('is any process running maintenance');
    // Mended: maintenance runs (on a leader, normally; here once, by hand).
    expect((await wd.runMaintenance()).rescued).toBe(1);
    const good = await wd.runCheck('nightshift.expired-leases');
    expect(good.status).toBe('ok');
    expect(good.alerts).toMatchObject([{ event: 'resolved' }]);
    await wd.cancelJob(id);
  });

  it('nightshift.discarded-jobs: a kind’s jobs failed for good within the window; resolves when they are retried and succeed', async () => {
    let fail = true;
    const flaky = defineJob({ kind: 'flaky', payload: z.object({}), run: async () => (fail ? discard('the provider refused') : undefined) });
    const wd = watchdog({ discardedJobs: { windowMs: 3_600_000, warningCount: 1, criticalCount: 2 } }, [flaky]);
    const a = await wd.enqueue(flaky, {});
    await drain(wd, { kinds: ['flaky'] });
    const one = await wd.runCheck('nightshift.discarded-jobs');
    expect(subject(one, 'flaky')).toMatchObject({ status: 'warning', details: { count: 1, newestId: a.id } });
    expect(subject(one, 'flaky')!.message).toContain(`nightshift jobs show ${a.id}`);
    await wd.enqueue(flaky, {});
    await drain(wd, { kinds: ['flaky'] });
    expect((await wd.runCheck('nightshift.discarded-jobs')).alerts).toMatchObject([{ subject: 'flaky', event: 'changed' }]);
    fail = false;
    await wd.retryJobs({ kind: 'flaky', state: 'discarded' });
    await drain(wd, { kinds: ['flaky'] });
    expect((await wd.runCheck('nightshift.discarded-jobs')).alerts).toMatchObject([{ subject: 'flaky', event: 'resolved' }]);
  });

  it('nightshift.waiting-for-operator: held jobs wait for a decision; resolves when an operator resolves them', async () => {
    const review = defineJob({ kind: 'review', payload: z.object({}), run: async () => hold('the amount needs a second pair of eyes') });
    const wd = watchdog({ waitingForOperator: { warningCount: 1, criticalAfterMs: 3_600_000 } }, [review]);
    const { id } = await wd.enqueue(review, {});
    await drain(wd, { kinds: ['review'] });
    expect((await wd.getJob(id)).state).toBe('held');
    const bad = await wd.runCheck('nightshift.waiting-for-operator');
    expect(subject(bad, 'review')).toMatchObject({ status: 'warning', details: { held: 1, abandoned: 0, oldestId: id } });
    expect(subject(bad, 'review')!.message).toContain('nightshift jobs resolve <id> --as completed|failed|retry');
    await wd.resolveJob(id, { as: 'completed', reason: 'checked' });
    expect((await wd.runCheck('nightshift.waiting-for-operator')).alerts).toMatchObject([{ subject: 'review', event: 'resolved' }]);
  });
});
