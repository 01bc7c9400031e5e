import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob } from '../../src/index.js';
import { drain } from '../../src/testing/index.js';
import { useTestDatabase } from '../support/db.js';

const t = useTestDatabase('kret');
t.migrateBeforeAll();
const q = () => `"${t.schema}"`;

describe("a kind's own retention", () => {
  it("overrides the client's for its states: its finished jobs (and their log lines) stay or go by its own age", async () => {
    const DAY = 86_400_000;
    const plain = defineJob({ kind: 'plain', payload: z.object({}), run: async (_p, ctx) => ctx.log.info('plain ran') });
    const kept = defineJob({ kind: 'kept', payload: z.object({}), retention: { completed: 14 * DAY }, run: async (_p, ctx) => ctx.log.info('kept ran') });
    const forever = defineJob({ kind: 'forever', payload: z.object({}), retention: { completed: false }, run: async () => undefined });
    const ns = t.client({ jobs: [plain, kept, forever], retention: { completed: DAY } });
    for (const j of [plain, kept, forever]) await ns.enqueue(j, {});
    await drain(ns);
    const age = async (days: number) => t.sql.query(`UPDATE ${q()}.jobs_history SET finished_at = now() - $1 * interval '1 day'`, [days]);
    await age(2);
    await ns.prune();
    const kinds = async () => (await t.sql.query(`SELECT kind FROM ${q()}.jobs_all ORDER BY kind`)).rows.map((r) => r.kind);
    expect(await kinds()).toEqual(['forever', 'kept']);
    expect((await t.sql.query(`SELECT msg FROM ${q()}.job_logs`)).rows.map((r) => r.msg)).toEqual(['kept ran']);
    await age(15);
    await ns.prune();
    expect(await kinds()).toEqual(['forever']);
  });

  it('is refused when it names a state that is not one, or an age that is not one', () => {
    expect(() => defineJob({ kind: 'x', payload: z.object({}), retention: { completd: 1, discarded: -1 } as never, run: async () => undefined })).toThrow(
      expect.objectContaining({ code: 'NS_CONFIG_INVALID', issues: [expect.objectContaining({ path: 'retention.completd' }), expect.objectContaining({ path: 'retention.discarded' })] }),
    );
  });
});
