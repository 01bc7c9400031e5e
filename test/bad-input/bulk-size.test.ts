import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';

// Issue 11, bug 7: a bulk enqueue of payloads each within the limit, together past what one
// statement's JSON parameter holds (jsonb stops at 256 MB; a JavaScript string a little later),
// failed with a raw error. Its own file: 300 MB through the database is too slow for the core
// suite that runs on every platform of the matrix.

const t = useTestDatabase('bulk_size');
t.migrateBeforeAll();
const any = defineJob({ kind: 'any', payload: z.unknown(), run: async () => undefined });

describe('enqueueMany chunks by bytes', () => {
  it('enqueueMany of payloads each within the limit but together past what one statement holds: all written', async () => {
    const ns = t.client({ jobs: [any] });
    const big = 'x'.repeat(1_000_000);
    // 300 MB of payloads: one JSON parameter of that size passes jsonb's 256 MB limit.
    const results = await ns.enqueueMany(
      any,
      Array.from({ length: 300 }, (_, i) => ({ i, big })),
    );
    expect(results).toHaveLength(300);
    expect(new Set(results.map((r) => r.id)).size).toBe(300);
    const ids = results.map((r) => r.id);
    const n = await t.sql.query(`SELECT count(*)::int AS n FROM "${t.schema}".jobs_all WHERE id = ANY($1::bigint[]) AND length(payload->>'big') = 1000000`, [ids]);
    expect(n.rows[0].n).toBe(300);
    await t.sql.query(`DELETE FROM "${t.schema}".jobs WHERE id = ANY($1::bigint[])`, [ids]);
  });
});
