import { defineConfig, defineJob } from 'nightshift';
import { createTestSchema } from 'nightshift/testing';
// createTestSchema: a fresh, migrated schema with a client; drop() removes it (or keeps it when asked).
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inject } from 'vitest';
import { z } from 'zod';

const url = inject('databaseUrl');
let admin: pg.Pool;
beforeAll(() => {
  admin = new pg.Pool({ connectionString: url, max: 2 });
});
afterAll(() => admin.end());
const exists = async (schema: string) => (await admin.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema])).rowCount === 1;

describe('createTestSchema', () => {
  it('makes a migrated schema of its own with a client from the config, and drop() removes it', async () => {
    const job = defineJob({ kind: 'hello', payload: z.object({}), queue: 'greetings', run: async () => undefined });
    const a = await createTestSchema({ databaseUrl: url, config: defineConfig({ database: { schema: 'ignored' }, jobs: [job] }), prefix: 'ts' });
    const b = await createTestSchema({ databaseUrl: url, prefix: 'ts' });
    try {
      expect(a.schema).toMatch(/^ts_[0-9a-f]{12}$/);
      expect(a.schema).not.toBe(b.schema);
      expect(a.ns.schema).toBe(a.schema);
      expect(await exists(a.schema)).toBe(true);
      // Migrated, and the config's jobs registered: the SQL enqueue function knows the kind.
      const { rows } = await admin.query(`SELECT queue FROM "${a.schema}".kinds WHERE kind = 'hello'`);
      expect(rows).toEqual([{ queue: 'greetings' }]);
      const producer = a.client({ jobs: [] });
      expect(producer.schema).toBe(a.schema);
    } finally {
      await a.drop();
      await b.drop({ keep: true });
    }
    expect(await exists(a.schema)).toBe(false);
    expect(await exists(b.schema)).toBe(true);
    await admin.query(`DROP SCHEMA "${b.schema}" CASCADE`);
  });

  it('says what is missing without a database, and refuses a prefix that makes a bad schema name', async () => {
    const saved = process.env.DATABASE_URL;
    delete process.env.DATABASE_URL;
    try {
      await expect(createTestSchema()).rejects.toMatchObject({ code: 'NS_OPTIONS_INVALID', message: expect.stringContaining('DATABASE_URL') });
    } finally {
      if (saved !== undefined) process.env.DATABASE_URL = saved;
    }
    await expect(createTestSchema({ databaseUrl: url, prefix: 'Bad-Prefix' })).rejects.toMatchObject({ code: 'NS_OPTIONS_INVALID' });
  });
});
