import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';

const t = useTestDatabase();
t.migrateBeforeAll();

const mail = defineJob({ kind: 'mail', payload: z.object({ to: z.string() }), queue: 'mailq', priority: 2, maxAttempts: 4, run: async () => undefined });
const once = defineJob({ kind: 'once', payload: z.object({}), delivery: 'at-most-once', run: async () => undefined });
const s = () => `"${t.schema}"`;

beforeAll(async () => {
  // Kinds are registered by a client that defines them (migrate or start).
  const ns = t.client({ jobs: [mail, once] });
  await ns.migrate();
  await ns.stop();
});

async function sqlError(text: string, values: unknown[] = []): Promise<{ code: string; message: string; hint: string }> {
  try {
    await t.sql.query(text, values);
  } catch (err) {
    return err as { code: string; message: string; hint: string };
  }
  throw new Error('expected an error');
}

describe('SQL enqueue function', () => {
  it('enqueues with the kind defaults', async () => {
    const r = await t.sql.query(`SELECT ${s()}.enqueue('mail', '{"to":"x@example.com"}') AS id`);
    const job = (await t.sql.query(`SELECT kind, queue, priority, max_attempts, at_most_once, state FROM ${s()}.jobs_all WHERE id = $1`, [r.rows[0].id])).rows[0];
    expect(job).toEqual({ kind: 'mail', queue: 'mailq', priority: 2, max_attempts: 4, at_most_once: false, state: 'available' });
    const onceId = (await t.sql.query(`SELECT ${s()}.enqueue('once') AS id`)).rows[0].id;
    const o = await t.sql.query(`SELECT at_most_once FROM ${s()}.jobs_all WHERE id = $1`, [onceId]);
    expect(o.rows[0].at_most_once).toBe(true);
  });

  it('takes the same options as the API, by name', async () => {
    const r = await t.sql.query(
      `SELECT ${s()}.enqueue('mail', '{"to":"y@example.com"}', queue => 'other', priority => -5, max_attempts => 9,
         delay => interval '1 hour', expires_at => now() + interval '2 hours') AS id`,
    );
    const job = (await t.sql.query(`SELECT queue, priority, max_attempts, run_at - created_at AS delay, expires_at > run_at AS ok FROM ${s()}.jobs_all WHERE id = $1`, [r.rows[0].id])).rows[0];
    expect(job).toMatchObject({ queue: 'other', priority: -5, max_attempts: 9, ok: true });
    expect(job.delay).toMatchObject({ hours: 1 });
  });

  it('dedupes and debounces like the API', async () => {
    const a = await t.sql.query(`SELECT ${s()}.enqueue('mail', '{"to":"1"}', dedupe_key => 'sk') AS id`);
    const b = await t.sql.query(`SELECT ${s()}.enqueue('mail', '{"to":"2"}', dedupe_key => 'sk') AS id`);
    expect(b.rows[0].id).toBe(a.rows[0].id);
    await t.sql.query(`SELECT ${s()}.enqueue('mail', '{"to":"3"}', dedupe_key => 'sk', debounce => interval '30 minutes')`);
    const job = (await t.sql.query(`SELECT payload, run_at > now() + interval '29 minutes' AS moved FROM ${s()}.jobs_all WHERE id = $1`, [a.rows[0].id])).rows[0];
    expect(job).toEqual({ payload: { to: '3' }, moved: true });
  });

  it('works from a trigger, inside the business transaction', async () => {
    await t.sql.query(`CREATE TABLE ${s()}.orders (id serial PRIMARY KEY, email text NOT NULL)`);
    await t.sql.query(`
      CREATE FUNCTION ${s()}.orders_mail() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN
        PERFORM ${s()}.enqueue('mail', jsonb_build_object('to', NEW.email), dedupe_key => 'order:' || NEW.id);
        RETURN NEW;
      END $$`);
    await t.sql.query(`CREATE TRIGGER orders_mail AFTER INSERT ON ${s()}.orders FOR EACH ROW EXECUTE FUNCTION ${s()}.orders_mail()`);
    const client = await t.sql.connect();
    try {
      await client.query('BEGIN');
      await client.query(`INSERT INTO ${s()}.orders (email) VALUES ('rolled@example.com')`);
      await client.query('ROLLBACK');
      await client.query(`INSERT INTO ${s()}.orders (email) VALUES ('kept@example.com')`);
    } finally {
      client.release();
    }
    const jobs = await t.sql.query(`SELECT payload->>'to' AS to FROM ${s()}.jobs_all WHERE dedupe_key LIKE 'order:%'`);
    expect(jobs.rows).toEqual([{ to: 'kept@example.com' }]);
  });

  it.each([
    [`enqueue('nope')`, 'NS001', 'NS_UNKNOWN_KIND'],
    [`enqueue(NULL)`, 'NS001', 'NS_UNKNOWN_KIND'],
    [`enqueue('mail', NULL)`, 'NS002', 'NS_PAYLOAD_INVALID'],
    [`enqueue('mail', jsonb_build_object('x', repeat('a', 1048577)))`, 'NS003', 'NS_PAYLOAD_TOO_LARGE'],
    [`enqueue('mail', '{}', queue => 'bad queue!')`, 'NS004', 'NS_OPTIONS_INVALID'],
    [`enqueue('mail', '{}', priority => 99999)`, 'NS004', 'NS_OPTIONS_INVALID'],
    [`enqueue('mail', '{}', max_attempts => 0)`, 'NS004', 'NS_OPTIONS_INVALID'],
    [`enqueue('mail', '{}', run_at => 'infinity')`, 'NS004', 'NS_OPTIONS_INVALID'],
    [`enqueue('mail', '{}', delay => interval '-1 second')`, 'NS004', 'NS_OPTIONS_INVALID'],
    [`enqueue('mail', '{}', run_at => now(), delay => interval '1 second')`, 'NS004', 'NS_OPTIONS_INVALID'],
    [`enqueue('mail', '{}', dedupe_key => '')`, 'NS004', 'NS_OPTIONS_INVALID'],
    [`enqueue('mail', '{}', debounce => interval '1 minute')`, 'NS004', 'NS_OPTIONS_INVALID'],
    [`enqueue('mail', '{}', expires_at => '-infinity')`, 'NS004', 'NS_OPTIONS_INVALID'],
  ])('%s fails with SQLSTATE %s (%s), a hint, and writes nothing', async (call, sqlState, code) => {
    const before = (await t.sql.query(`SELECT count(*)::int AS n FROM ${s()}.jobs_all`)).rows[0].n;
    const err = await sqlError(`SELECT ${s()}.${call}`);
    expect(err.code).toBe(sqlState);
    expect(err.message.startsWith(code)).toBe(true);
    expect(err.hint).toBeTruthy();
    expect((await t.sql.query(`SELECT count(*)::int AS n FROM ${s()}.jobs_all`)).rows[0].n).toBe(before);
  });
});
