import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob, type NightshiftEvent } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';

// A schema migrated by a newer version: this code runs beside it only when every migration it does
// not know was marked compatible (a rolling deploy restarts and rolls back old pods).
const t = useTestDatabase();
t.migrateBeforeAll();
const q = () => `"${t.schema}"`;
const job = defineJob({ kind: 'compat', payload: z.object({}), run: () => undefined });

describe('a schema newer than this code', () => {
  it('starts, with a warning event, when the newer migrations are marked compatible', async () => {
    await t.sql.query(`INSERT INTO ${q()}.migrations (version, name, compatible) VALUES (9001, 'future_additive', true)`);
    try {
      const ns = t.client({ jobs: [job] });
      const events: NightshiftEvent[] = [];
      ns.on((e) => events.push(e));
      await ns.start();
      expect(events.find((e) => e.type === 'schema.newer')).toMatchObject({ type: 'schema.newer', versions: [9001] });
      const { id } = await ns.enqueue(job, {});
      expect(id).toMatch(/^\d+$/);
    } finally {
      await t.sql.query(`DELETE FROM ${q()}.migrations WHERE version = 9001`);
    }
  });

  it('refuses with NS_SCHEMA_TOO_NEW naming the migration that is not', async () => {
    await t.sql.query(`INSERT INTO ${q()}.migrations (version, name, compatible) VALUES (9001, 'future_additive', true), (9002, 'future_breaking', false)`);
    try {
      const ns = t.client({ jobs: [job] });
      await expect(ns.start()).rejects.toMatchObject({ code: 'NS_SCHEMA_TOO_NEW', message: expect.stringContaining('migration 9002') });
    } finally {
      await t.sql.query(`DELETE FROM ${q()}.migrations WHERE version >= 9001`);
    }
  });

  it('records for each applied migration whether it is compatible', async () => {
    const { rows } = await t.sql.query(`SELECT version, compatible FROM ${q()}.migrations WHERE version IN (5, 6, 7) ORDER BY version`);
    expect(rows).toEqual([
      { version: 5, compatible: false },
      { version: 6, compatible: true },
      { version: 7, compatible: true },
    ]);
  });
});
