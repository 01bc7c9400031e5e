import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob } from '../../src/index.js';
import { cli } from '../support/cli.js';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';

const t = useTestDatabase();
t.migrateBeforeAll();

describe('the per-run log (ctx.log kept with the job)', () => {
  it('stores what each attempt said, redacted and bounded, and jobs show prints it', async () => {
    const job = defineJob({
      kind: 'chatty',
      payload: z.object({}),
      backoff: () => 0,
      run: async (_p, ctx) => {
        ctx.log.info({ pools: 5, password: 'hunter2', nested: { apiKey: 'k-123' } }, 'syncing pot sizes');
        if (ctx.attempt === 1) {
          for (let i = 0; i < 150; i++) ctx.log.debug(`step ${i}`);
          throw new Error('rpc timeout');
        }
        ctx.log.warn('done on the second attempt');
      },
    });
    const ns = t.client({ jobs: [job], pollIntervalMs: 50 });
    const { id } = await ns.enqueue(job, {});
    await ns.start();
    await waitFor('completed', async () => (await ns.getJob(id)).state === 'completed');
    const logs = await ns.jobLogs(id);
    const first = logs.filter((l) => l.attempt === 1);
    const second = logs.filter((l) => l.attempt === 2);
    expect(first).toHaveLength(100);
    expect(first[0]).toMatchObject({ level: 'info', msg: 'syncing pot sizes', fields: { pools: 5, password: '[redacted]', nested: { apiKey: '[redacted]' } } });
    expect(first.at(-1)!.msg).toMatch(/^\d+ more line\(s\) not kept/);
    expect(second.map((l) => l.msg)).toEqual(['syncing pot sizes', 'done on the second attempt']);
    const shown = await cli(['jobs', 'show', id], { env: { DATABASE_URL: t.url, NS_SCHEMA: t.schema } });
    expect(shown.stdout).toContain('log:');
    expect(shown.stdout).toContain('attempt 2');
    expect(shown.stdout).toContain('done on the second attempt');
    expect(shown.stdout).not.toContain('hunter2');
  });

  it('is deleted with its job (the job retention applies)', async () => {
    const job = defineJob({ kind: 'short-lived', payload: z.object({}), run: async (_p, ctx) => ctx.log.info('hello') });
    const ns = t.client({ jobs: [job] });
    const { id } = await ns.enqueue(job, {});
    await ns.start();
    await waitFor('logged', async () => (await ns.getJob(id)).state === 'completed' && (await ns.jobLogs(id)).length === 1);
    await t.sql.query(`UPDATE "${t.schema}".jobs_history SET finished_at = now() - interval '2 days' WHERE id = $1`, [id]);
    await ns.prune({ completed: 86_400_000 });
    expect((await t.sql.query(`SELECT count(*)::int AS n FROM "${t.schema}".job_logs WHERE job_id = $1`, [id])).rows[0].n).toBe(0);
  });
});
