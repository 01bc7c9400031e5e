import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';

// Entry point: the SQL function enqueue(), for triggers and SQL callers. Each bad call fails with
// a stable SQLSTATE — NS001..NS004 from the function, or PostgreSQL's own for values that cannot
// even be cast to the parameter's type — and writes nothing. Cases already in
// test/jobs/sql-enqueue.test.ts are not repeated here.

const t = useTestDatabase('bad_sql');
const s = () => `"${t.schema}"`;
const mail = defineJob({ kind: 'mail', payload: z.object({ to: z.string() }), run: async () => undefined });

let serverVersion = 0;
beforeAll(async () => {
  const ns = t.client({ jobs: [mail] });
  await ns.migrate();
  await ns.stop();
  serverVersion = Number((await t.sql.query(`SELECT current_setting('server_version_num') AS v`)).rows[0].v);
});

// Infinite intervals exist from PostgreSQL 17 on. Before it the literal itself is refused
// (22007, invalid input syntax) before the function runs: nothing is written either way, and the
// function's own check is there for the servers that can express one.
function expectedState(call: string, sqlState: string): string {
  return call.includes("'infinity'::interval") && serverVersion < 170_000 ? '22007' : sqlState;
}

describe('SQL enqueue(): bad calls', () => {
  it.each([
    [`enqueue('x''; DROP TABLE jobs; --')`, 'NS001'],
    [`enqueue(repeat('k', 10000))`, 'NS001'],
    [`enqueue('MAIL')`, 'NS001'],
    [`enqueue('mail', '{}', queue => 'x''; DROP TABLE jobs; --')`, 'NS004'],
    [`enqueue('mail', '{}', queue => '')`, 'NS004'],
    [`enqueue('mail', '{}', queue => repeat('q', 129))`, 'NS004'],
    [`enqueue('mail', '{}', priority => -1001)`, 'NS004'],
    [`enqueue('mail', '{}', max_attempts => 1001)`, 'NS004'],
    [`enqueue('mail', '{}', max_attempts => -1)`, 'NS004'],
    [`enqueue('mail', '{}', delay => 'infinity'::interval)`, 'NS004'],
    [`enqueue('mail', '{}', run_at => 'infinity')`, 'NS004'],
    [`enqueue('mail', '{}', expires_at => 'infinity')`, 'NS004'],
    [`enqueue('mail', '{}', dedupe_key => repeat('k', 513))`, 'NS004'],
    [`enqueue('mail', '{}', dedupe_key => 'k', debounce => interval '-1 second')`, 'NS004'],
    [`enqueue('mail', '{}', dedupe_key => 'k', debounce => 'infinity'::interval)`, 'NS004'],
    [`enqueue('mail', jsonb_build_object('big', repeat('é', 600000)))`, 'NS003'],
    // Issue 11, bug 7: jobs that could never run, and times the API refuses, are refused here too.
    [`enqueue('mail', '{}', run_at => '4713-01-01 00:00:00+00 BC')`, 'NS004'],
    [`enqueue('mail', '{}', run_at => '200000-01-01 00:00:00+00')`, 'NS004'],
    [`enqueue('mail', '{}', expires_at => '200000-01-01 00:00:00+00')`, 'NS004'],
    [`enqueue('mail', '{}', delay => interval '101 years')`, 'NS004'],
    [`enqueue('mail', '{}', expires_at => now() - interval '1 hour')`, 'NS004'],
    [`enqueue('mail', '{}', run_at => now() + interval '2 hours', expires_at => now() + interval '1 hour')`, 'NS004'],
    [`enqueue('mail', '{}', dedupe_key => 'k', debounce => interval '1 second', run_at => now() + interval '1 hour')`, 'NS004'],
    [`enqueue('mail', '{}', dedupe_key => 'k', debounce => interval '1 second', delay => interval '1 hour')`, 'NS004'],
    [`enqueue('mail', '{}', trace_context => '[1, 2]')`, 'NS004'],
    [`enqueue('mail', '{}', trace_context => '{"traceparent": "not-a-traceparent"}')`, 'NS004'],
    [`enqueue('mail', '{}', trace_context => jsonb_build_object('tracestate', repeat('x', 600)))`, 'NS004'],
    [`enqueue('mail', '{}', trace_context => '{"a":"1","b":"2","c":"3","d":"4","e":"5","f":"6","g":"7","h":"8","i":"9"}')`, 'NS004'],
    // Not castable to the parameter's type: PostgreSQL refuses before the function runs.
    [`enqueue('mail', '{"a":"\\u0000"}')`, '22P05'],
    [`enqueue('mail', '{"a":"\\ud800"}')`, '22P02'],
    [`enqueue('mail', '{"a":')`, '22P02'],
    [`enqueue('mail', '{}', run_at => '2026-02-30T00:00:00Z')`, '22008'],
    [`enqueue('mail', '{}', run_at => 'soon')`, '22007'],
    [`enqueue('mail', '{}', priority => '99999999999')`, '22003'],
  ])('%s fails with SQLSTATE %s and writes nothing', async (call, expected) => {
    const sqlState = expectedState(call, expected);
    const before = await t.jobCount();
    const err = await t.sql.query(`SELECT ${s()}.${call}`).then(
      () => undefined,
      (e: unknown) => e as { code: string; message: string; hint?: string },
    );
    expect(err, 'expected an error').toBeDefined();
    expect(err!.code).toBe(sqlState);
    if (sqlState.startsWith('NS')) {
      expect(err!.message).toMatch(/^NS_[A-Z_]+: /);
      expect(err!.hint).toBeTruthy();
    }
    expect(await t.jobCount()).toBe(before);
  });

  it('a kind with SQL metacharacters is data, never SQL: the tables are intact', async () => {
    await t.sql.query(`SELECT ${s()}.enqueue('mail', '{"to":"a"}')`).catch(() => undefined);
    await t.sql.query(`SELECT ${s()}.enqueue('x''); DELETE FROM ${s()}.jobs; --')`).catch(() => undefined);
    expect(await t.jobCount()).toBeGreaterThan(0);
  });
});
