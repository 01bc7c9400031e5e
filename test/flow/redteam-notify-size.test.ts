import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';
import { listenTo } from '../support/listen.js';
import { waitFor } from '../support/wait.js';

// The jobs_limit_freed trigger (migration 0011) names every limit of a waited job in its
// notification. A kind may declare any number of limits with names of up to 100 characters: the
// payload must not pass pg_notify's 8,000 bytes, or the job can never leave `running`.

const t = useTestDatabase('rtnsize');
t.migrateBeforeAll();

const many = Array.from({ length: 100 }, (_, i) => ({ limit: 1_000, name: `${'p'.repeat(90)}${i}` }));
const job = defineJob({ kind: 'rn', payload: z.object({ n: z.number() }), concurrency: many, run: async () => undefined });

describe('the freed notification of a job with many limits', () => {
  it('lets a waited job with 100 long-named limits leave running', async () => {
    const s = `"${t.schema}"`;
    const { id } = await t.client({ jobs: [job] }).enqueue(job, { n: 1 });
    // Running and waited for, as a claim that passed jobs over for its limits leaves it.
    await t.sql.query(`UPDATE ${s}.jobs SET state = 'running', lease_owner = 'test', lease_token = 1, lease_expires_at = now() + interval '1 minute', attempt = 1, limit_waited = true WHERE id = $1`, [id]);
    const listener = await listenTo(t.url, `${t.schema}:jobs`);
    const heard = listener.heard;
    try {
      await t.sql.query(`UPDATE ${s}.jobs SET state = 'available', lease_owner = NULL, lease_token = NULL, lease_expires_at = NULL WHERE id = $1`, [id]);
      expect((await t.sql.query(`SELECT state FROM ${s}.jobs WHERE id = $1`, [id])).rows[0].state).toBe('available');
      // The names do not fit: the notification stands for any limit, and still wakes the claimers.
      await waitFor('the freed notification', () => heard.includes('default freed *'));
    } finally {
      await listener.end();
    }
  });
});
