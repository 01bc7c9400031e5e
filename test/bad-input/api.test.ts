import pg from 'pg';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createNightshift, defineCheck, defineJob, isNightshiftError, type NightshiftError } from '../../src/index.js';
import { silentLogger } from '../../src/telemetry/logger.js';
import { useTestDatabase } from '../support/db.js';

// Entry point: the TypeScript API. Each bad input gets a typed error with a stable code, names the
// field, and writes nothing. Cases already in test/jobs/enqueue.test.ts and admin.test.ts are not
// repeated here.

const t = useTestDatabase('bad_api');
t.migrateBeforeAll();

const mail = defineJob({ kind: 'mail', payload: z.object({ to: z.string() }), run: async () => undefined });
const any = defineJob({ kind: 'any', payload: z.unknown(), run: async () => undefined });

async function failure(p: Promise<unknown> | (() => unknown)): Promise<NightshiftError> {
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (err) {
    expect(isNightshiftError(err), `not a typed error: ${String(err)}`).toBe(true);
    return err as NightshiftError;
  }
  throw new Error('expected a rejection');
}

const deep = (depth: number): unknown => {
  let v: unknown = 1;
  for (let i = 0; i < depth; i++) v = [v];
  return v;
};

describe('enqueue: payloads that cannot be stored faithfully', () => {
  const sparse = [1, , 3]; // eslint-disable-line no-sparse-arrays
  it.each([
    ['an invalid Date', { d: new Date('nonsense') }],
    ['a symbol value', { s: Symbol('s') }],
    ['a sparse array', sparse],
    ['a lone low surrogate', { s: 'low \udc00 half' }],
    ['a lone surrogate in a key', { ['k\ud800']: 1 }],
    ['a NUL in a nested key', { a: { b: [{ ['\u0000']: 1 }] } }],
    ['-Infinity deep inside', { a: [{ b: [-Infinity] }] }],
    ['a Set', { s: new Set([1]) }],
    ['a nesting deeper than the stack', deep(200_000)],
  ])('%s: NS_PAYLOAD_INVALID, nothing written', async (_what, payload) => {
    const ns = t.client({ jobs: [any] });
    const before = await t.jobCount();
    expect((await failure(ns.enqueue(any, payload))).code).toBe('NS_PAYLOAD_INVALID');
    expect(await t.jobCount()).toBe(before);
  });

  it('accepts what JSON can hold: astral characters, U+FFFF, -0 as 0, big numbers, deep but finite nesting', async () => {
    const ns = t.client({ jobs: [any] });
    const payload = { emoji: '😀 \uD83D\uDE00', nonchar: '\uFFFF', zero: -0, big: 2 ** 60, tiny: 5e-324, nested: deep(100) };
    const job = await ns.getJob((await ns.enqueue(any, payload)).id);
    expect(job.payload).toEqual(JSON.parse(JSON.stringify(payload)));
  });

  it('an oversized payload of enqueueMany names its index and writes none of the batch', async () => {
    const ns = t.client({ jobs: [any], maxPayloadBytes: 1_000 });
    const before = await t.jobCount();
    const err = await failure(ns.enqueueMany(any, [{ ok: 1 }, { big: 'x'.repeat(2_000) }]));
    expect(err.code).toBe('NS_PAYLOAD_TOO_LARGE');
    expect(err.message).toContain('payloads[1]');
    expect(await t.jobCount()).toBe(before);
  });
});

describe('enqueue: options', () => {
  const far = new Date(Date.UTC(10_000, 0, 1));
  it.each([
    ['priority NaN', { priority: Number.NaN }, 'priority'],
    ['priority -Infinity', { priority: -Infinity }, 'priority'],
    ['priority as a string', { priority: '5' }, 'priority'],
    ['priority -1001', { priority: -1001 }, 'priority'],
    ['maxAttempts NaN', { maxAttempts: Number.NaN }, 'maxAttempts'],
    ['maxAttempts 2.5', { maxAttempts: 2.5 }, 'maxAttempts'],
    ['maxAttempts as a string', { maxAttempts: '3' }, 'maxAttempts'],
    ['delayMs beyond 100 years', { delayMs: 1e20 }, 'delayMs'],
    ['delayMs as a string', { delayMs: '100' }, 'delayMs'],
    ['debounceMs negative', { dedupeKey: 'k', debounceMs: -1 }, 'debounceMs'],
    ['debounceMs NaN', { dedupeKey: 'k', debounceMs: Number.NaN }, 'debounceMs'],
    ['debounceMs with runAt', { dedupeKey: 'k', debounceMs: 10, runAt: new Date() }, 'debounceMs'],
    ['maxAgeMs NaN', { maxAgeMs: Number.NaN }, 'maxAgeMs'],
    ['maxAgeMs -1', { maxAgeMs: -1 }, 'maxAgeMs'],
    ['maxAgeMs Infinity', { maxAgeMs: Infinity }, 'maxAgeMs'],
    ['runAt without a zone', { runAt: '2026-01-01T10:00:00' }, 'runAt'],
    ['runAt as prose', { runAt: 'tomorrow' }, 'runAt'],
    ['runAt as a number', { runAt: 1_767_225_600_000 }, 'runAt'],
    ['runAt on 30 February', { runAt: '2026-02-30T00:00:00Z' }, 'runAt'],
    ['runAt on 29 February of a common year', { runAt: '2027-02-29T12:00:00+01:00' }, 'runAt'],
    ['runAt on 31 April', { runAt: '2026-04-31T00:00:00Z' }, 'runAt'],
    ['runAt in the year 10000', { runAt: far }, 'runAt'],
    ['runAt before 1970', { runAt: '1969-12-31T23:59:59Z' }, 'runAt'],
    ['expiresAt as prose', { expiresAt: 'soon' }, 'expiresAt'],
    ['expiresAt an invalid Date', { expiresAt: new Date(Number.NaN) }, 'expiresAt'],
    ['dedupeKey with a NUL', { dedupeKey: 'a\u0000b' }, 'dedupeKey'],
    ['dedupeKey a lone surrogate', { dedupeKey: '\ud800' }, 'dedupeKey'],
    ['dedupeKey a number', { dedupeKey: 123 }, 'dedupeKey'],
    ['dedupeKey of 100,000 characters', { dedupeKey: 'k'.repeat(100_000) }, 'dedupeKey'],
    ['queue with a space', { queue: 'a b' }, 'queue'],
    ['queue with a double quote', { queue: 'q"uote' }, 'queue'],
    ['queue with non-ASCII letters', { queue: 'ünïcode' }, 'queue'],
    ['queue a number', { queue: 42 }, 'queue'],
    ['traceContext a string', { traceContext: 'x' }, 'traceContext'],
    ['traceContext with a number', { traceContext: { traceparent: 42 } }, 'traceContext'],
    ['traceContext over-long', { traceContext: { traceparent: 'x'.repeat(2_000) } }, 'traceContext'],
    ['db without a query function', { db: { query: 'no' } }, 'db'],
  ])('%s: NS_OPTIONS_INVALID naming the field, nothing written', async (_what, options, field) => {
    const ns = t.client({ jobs: [mail] });
    const before = await t.jobCount();
    const err = await failure(ns.enqueue(mail, { to: 'x' }, options as never));
    expect(err.code).toBe('NS_OPTIONS_INVALID');
    expect(err.issues.map((i) => i.path)).toContain(field);
    expect(await t.jobCount()).toBe(before);
  });

  it.each([
    ['an array', []],
    ['a string', 'priority'],
  ])('options that are %s: NS_OPTIONS_INVALID', async (_what, options) => {
    const ns = t.client({ jobs: [mail] });
    const before = await t.jobCount();
    expect((await failure(ns.enqueue(mail, { to: 'x' }, options as never))).code).toBe('NS_OPTIONS_INVALID');
    expect(await t.jobCount()).toBe(before);
  });

  it.each([
    ['a string', 'x'],
    ['null', null],
    ['an array-like object', { length: 2 }],
  ])('enqueueMany with payloads that are %s: NS_OPTIONS_INVALID', async (_what, payloads) => {
    const ns = t.client({ jobs: [mail] });
    expect((await failure(ns.enqueueMany(mail, payloads as never))).code).toBe('NS_OPTIONS_INVALID');
  });

  it('enqueueMany with a different db per payload: NS_OPTIONS_INVALID, nothing written', async () => {
    const ns = t.client({ jobs: [mail] });
    const a = new pg.Client({ connectionString: t.url });
    const b = new pg.Client({ connectionString: t.url });
    await Promise.all([a.connect(), b.connect()]);
    try {
      const before = await t.jobCount();
      const err = await failure(ns.enqueueMany(mail, [{ to: '1' }, { to: '2' }], (_p, i) => ({ db: i === 0 ? a : b })));
      expect(err.code).toBe('NS_OPTIONS_INVALID');
      expect(await t.jobCount()).toBe(before);
    } finally {
      await Promise.all([a.end(), b.end()]);
    }
  });

  it.each([
    ['SQL metacharacters', "x'; DROP TABLE jobs; --"],
    ['an over-long name', 'k'.repeat(129)],
    ['an empty name', ''],
  ])('enqueueRegistered with a kind of %s: a typed error, nothing written', async (_what, kind) => {
    const ns = t.client({ jobs: [mail] });
    const before = await t.jobCount();
    const err = await failure(ns.enqueueRegistered(kind, {}));
    expect(['NS_UNKNOWN_KIND', 'NS_OPTIONS_INVALID']).toContain(err.code);
    expect(await t.jobCount()).toBe(before);
  });
});

describe('defineJob', () => {
  const base = { kind: 'k', payload: z.object({}), run: () => undefined };
  it.each([
    ['a kind with SQL metacharacters', { kind: "x'; DROP TABLE jobs; --" }, 'kind'],
    ['an over-long kind', { kind: 'k'.repeat(129) }, 'kind'],
    ['an empty kind', { kind: '' }, 'kind'],
    ['a kind that is not a string', { kind: 42 }, 'kind'],
    ['a queue with a space', { queue: 'a b' }, 'queue'],
    ['an over-long queue', { queue: 'q'.repeat(129) }, 'queue'],
    ['priority NaN', { priority: Number.NaN }, 'priority'],
    ['priority 1001', { priority: 1001 }, 'priority'],
    ['maxAttempts 0', { maxAttempts: 0 }, 'maxAttempts'],
    ['maxAttempts Infinity', { maxAttempts: Infinity }, 'maxAttempts'],
    ['timeoutMs -1', { timeoutMs: -1 }, 'timeoutMs'],
    ['timeoutMs NaN', { timeoutMs: Number.NaN }, 'timeoutMs'],
    ['delivery exactly-once', { delivery: 'exactly-once' }, 'delivery'],
    ['a payload that is not a schema', { payload: {} }, 'payload'],
    ['run that is not a function', { run: 'go' }, 'run'],
    ['a negative back-off', { backoff: { initialMs: -1 } }, 'backoff.initialMs'],
    ['a back-off jitter above 1', { backoff: { jitter: 2 } }, 'backoff.jitter'],
    ['a misspelt option', { retries: 3 }, 'retries'],
  ])('%s: NS_CONFIG_INVALID naming the field', async (_what, patch, field) => {
    const err = await failure(() => defineJob({ ...base, ...patch } as never));
    expect(err.code).toBe('NS_CONFIG_INVALID');
    expect(err.issues.map((i) => i.path)).toContain(field);
  });
});

describe('defineJob: fleet-wide limits', () => {
  const base = { kind: 'limited', payload: z.unknown(), run: async () => undefined };
  it.each([
    ['a limit given as a string', { concurrency: { limit: '5' } }, 'concurrency.limit', 'got "5"'],
    ['a limit of 0', { concurrency: { limit: 0 } }, 'concurrency.limit', 'got 0'],
    ['a fractional limit, second of two', { concurrency: [{ limit: 2 }, { limit: 1.5 }] }, 'concurrency.1.limit', 'got 1.5'],
    ['a rate limit without its window', { rateLimit: { limit: 5 } }, 'rateLimit.per', 'got undefined'],
    ['a window given as a duration string', { rateLimit: { limit: 5, per: '1s' } }, 'rateLimit.per', 'got "1s"'],
    ['a key that is not a function', { concurrency: { limit: 2, key: 'account' } }, 'concurrency.key', '(payload) => string'],
    ['a misspelt limit option', { concurrency: { limt: 2 } }, 'concurrency.limt', 'did you mean "limit"'],
    ['a limit name with a space', { rateLimit: { limit: 5, per: 1_000, name: 'two words' } }, 'rateLimit.name', 'is not allowed'],
  ])('%s: NS_CONFIG_INVALID naming the field and what it got', async (_what, patch, field, says) => {
    const err = await failure(() => defineJob({ ...base, ...patch } as never));
    expect(err.code).toBe('NS_CONFIG_INVALID');
    expect(err.issues).toContainEqual(expect.objectContaining({ path: field, message: expect.stringContaining(says) }));
  });
});

describe('createNightshift', () => {
  const url = () => t.url;
  it.each([
    ['a schema with SQL metacharacters', { schema: 'x"; DROP SCHEMA public; --' }, 'NS_CONFIG_INVALID', 'schema'],
    ['a schema with capitals', { schema: 'Upper' }, 'NS_CONFIG_INVALID', 'schema'],
    ['an over-long schema', { schema: 's'.repeat(49) }, 'NS_CONFIG_INVALID', 'schema'],
    ['concurrency 0', { concurrency: 0 }, 'NS_CONFIG_INVALID', 'concurrency'],
    ['concurrency NaN', { concurrency: Number.NaN }, 'NS_CONFIG_INVALID', 'concurrency'],
    ['leaseMs below a second', { leaseMs: 500 }, 'NS_CONFIG_INVALID', 'leaseMs'],
    ['heartbeatMs not below leaseMs', { leaseMs: 5_000, heartbeatMs: 5_000 }, 'NS_CONFIG_INVALID', 'heartbeatMs'],
    ['pollIntervalMs Infinity', { pollIntervalMs: Infinity }, 'NS_CONFIG_INVALID', 'pollIntervalMs'],
    ['shutdownGraceMs negative', { shutdownGraceMs: -1 }, 'NS_CONFIG_INVALID', 'shutdownGraceMs'],
    ['maxPayloadBytes 0', { maxPayloadBytes: 0 }, 'NS_CONFIG_INVALID', 'maxPayloadBytes'],
    ['a misspelt option', { concurency: 4 }, 'NS_CONFIG_INVALID', 'concurency'],
    ['a role name with a space', { roles: { 'two words': {} } }, 'NS_CONFIG_INVALID', 'roles.two words'],
    ['a role queue with SQL metacharacters', { roles: { r: { queues: ["q'--"] } } }, 'NS_CONFIG_INVALID', 'roles.r.queues.0'],
    ['a required variable that is no name', { requiredEnv: ['NOT A NAME'] }, 'NS_CONFIG_INVALID', 'requiredEnv.0'],
    ['an over-long owner', { owner: 'o'.repeat(201) }, 'NS_CONFIG_INVALID', 'owner'],
  ])('%s: %s naming the field', async (_what, patch, code, field) => {
    const err = await failure(() => createNightshift({ databaseUrl: url(), logger: silentLogger(), ...patch } as never));
    expect(err.code).toBe(code);
    expect(err.issues.map((i) => i.path)).toContain(field);
  });

  it.each([
    ['a string age', { completed: '7d' }, 'retention.completed', /whole number of milliseconds ≥ 0 .*or false to keep them; got "7d"/],
    ['a negative age', { discarded: -1 }, 'retention.discarded', /whole number of milliseconds.*got -1/],
    ['a fraction of a millisecond (prune() could not apply it)', { completed: 1.5 }, 'retention.completed', /whole number of milliseconds.*got 1\.5/],
    ['true', { expired: true }, 'retention.expired', /or false to keep them; got true/],
    ['a state that is not a finished one', { held: 1_000 }, 'retention.held', /known options: retention\.completed, retention\.discarded, retention\.cancelled, retention\.expired/],
    ['a misspelt state', { complete: 1_000 }, 'retention.complete', /did you mean "completed"/],
    ['not an object', '30d', 'retention', /must be an object of finished states \(completed, discarded, cancelled, expired\).*got "30d"/],
  ])('retention with %s: NS_CONFIG_INVALID naming its path and what is accepted', async (_what, retention, path, message) => {
    const err = await failure(() => createNightshift({ databaseUrl: url(), logger: silentLogger(), retention } as never));
    expect(err.code).toBe('NS_CONFIG_INVALID');
    const issue = err.issues.find((i) => i.path === path);
    expect(issue, JSON.stringify(err.issues)).toBeDefined();
    expect(issue!.message).toMatch(message);
    expect(issue!.message).not.toMatch(/^Invalid input/);
  });

  it('accepts every finished state with whole milliseconds or false', async () => {
    const ns = createNightshift({ databaseUrl: url(), logger: silentLogger(), retention: { completed: 0, discarded: 86_400_000, cancelled: false, expired: 1 } });
    await ns.stop();
  });

  it('an unknown role fails planning with NS_UNKNOWN_ROLE listing the valid ones', async () => {
    const ns = t.client({ roles: { api: {}, worker: {} }, activeRoles: ['wroker'] });
    const err = await failure(() => ns.planRoles());
    expect(err.code).toBe('NS_UNKNOWN_ROLE');
    expect(err.message).toContain('api, worker');
  });
});

describe('operator API', () => {
  it.each([
    ['beyond bigint', '9999999999999999999'],
    ['zero', '0'],
    ['negative', '-1'],
    ['a fraction', '1.5'],
    ['padded', ' 1'],
    ['a float number', 1.5],
    ['an object', {}],
  ])('a job id that is %s: NS_OPTIONS_INVALID for get, retry, cancel and resolve', async (_what, id) => {
    const ns = t.client();
    for (const call of [() => ns.getJob(id as never), () => ns.retryJob(id as never), () => ns.cancelJob(id as never), () => ns.resolveJob(id as never, { as: 'retry' })]) {
      expect((await failure(call)).code).toBe('NS_OPTIONS_INVALID');
    }
  });

  it.each([
    ['listJobs with a kind of SQL metacharacters', (ns: ReturnType<typeof t.client>) => ns.listJobs({ kind: "x' OR '1'='1" })],
    ['listJobs with beforeId not an id', (ns: ReturnType<typeof t.client>) => ns.listJobs({ beforeId: 'abc' })],
    ['listJobs with limit NaN', (ns: ReturnType<typeof t.client>) => ns.listJobs({ limit: Number.NaN })],
    ['listAudit with beforeId not an id', (ns: ReturnType<typeof t.client>) => ns.listAudit({ beforeId: 'abc' })],
    ['listAudit with beforeId beyond bigint', (ns: ReturnType<typeof t.client>) => ns.listAudit({ beforeId: '99999999999999999999' })],
    ['retryJobs with ids that are not ids', (ns: ReturnType<typeof t.client>) => ns.retryJobs({ ids: ['1', 'x'] })],
    ['cancelJobs with an unknown state', (ns: ReturnType<typeof t.client>) => ns.cancelJobs({ state: 'gone' as never })],
    ['pauseQueue with SQL metacharacters', (ns: ReturnType<typeof t.client>) => ns.pauseQueue("x'; DROP TABLE queues; --")],
    ['pauseQueue with an over-long name', (ns: ReturnType<typeof t.client>) => ns.pauseQueue('q'.repeat(129))],
    ['resolveJob without as', (ns: ReturnType<typeof t.client>) => ns.resolveJob('1', {} as never)],
  ])('%s: NS_OPTIONS_INVALID, nothing changed', async (_what, call) => {
    const ns = t.client();
    const audit = (await t.sql.query(`SELECT count(*)::int AS n FROM "${t.schema}".audit_log`)).rows[0].n;
    expect((await failure(call(ns))).code).toBe('NS_OPTIONS_INVALID');
    expect((await t.sql.query(`SELECT count(*)::int AS n FROM "${t.schema}".audit_log`)).rows[0].n).toBe(audit);
  });
});

describe('enqueue: jobs that could never run, and trace contexts (issue 11, bug 7)', () => {
  const hour = 3_600_000;
  it.each([
    ['a deadline in the past', { expiresAt: new Date(Date.now() - hour) }, 'expiresAt'],
    ['a deadline before the delayed run time', { delayMs: 2 * hour, expiresAt: new Date(Date.now() + hour) }, 'expiresAt'],
    ['a maximum age shorter than the time until runAt', { runAt: new Date(Date.now() + 2 * hour), maxAgeMs: hour }, 'maxAgeMs'],
    ['a maximum age shorter than the debounce window', { dedupeKey: 'k', debounceMs: 2 * hour, maxAgeMs: hour }, 'maxAgeMs'],
    ['a trace context that is not an object', { traceContext: 'traceparent' }, 'traceContext'],
    ['a malformed traceparent', { traceContext: { traceparent: '00-xyz' } }, 'traceContext'],
    ['a trace context with too many fields', { traceContext: Object.fromEntries(Array.from({ length: 9 }, (_, i) => [`k${i}`, 'v'])) }, 'traceContext'],
    ['an over-long tracestate', { traceContext: { tracestate: 'x'.repeat(600) } }, 'traceContext'],
  ])('%s: NS_OPTIONS_INVALID naming the field, nothing written', async (_what, options, field) => {
    const ns = t.client({ jobs: [mail] });
    const before = await t.jobCount();
    const err = await failure(ns.enqueue(mail, { to: 'a' }, options as never));
    expect(err.code).toBe('NS_OPTIONS_INVALID');
    expect(err.issues.map((i) => i.path)).toContain(field);
    expect(await t.jobCount()).toBe(before);
  });
});

describe('defineCheck and the watchdog API: every problem named, nothing written', () => {
  const run = () => ({ status: 'ok' as const, message: '' });
  it.each([
    ['no timing', { name: 'c', run }, 'cron'],
    ['both timings', { name: 'c', every: '1m', cron: '* * * * *', run }, 'every'],
    ['an interval below a second', { name: 'c', every: 500, run }, 'every'],
    ['a cron that never fires', { name: 'c', cron: '0 0 30 2 *', run }, 'cron'],
    ['a zone that does not exist', { name: 'c', cron: '0 1 * * *', tz: 'Mars/Olympus', run }, 'tz'],
    ['a name with a space', { name: 'two words', every: '1m', run }, 'name'],
    ['a name reserved for the built-ins', { name: 'nightshift.mine', every: '1m', run }, 'name'],
    ['no run function', { name: 'c', every: '1m' }, 'run'],
    ['failAfter 0', { name: 'c', every: '1m', failAfter: 0, run }, 'failAfter'],
    ['a renotify below a second', { name: 'c', every: '1m', renotify: 10, run }, 'renotify'],
    ['a timeout of two hours', { name: 'c', every: '1m', timeoutMs: '2h', run }, 'timeoutMs'],
    ['notify not a list', { name: 'c', every: '1m', notify: 'ops', run }, 'notify'],
    ['a misspelt option', { name: 'c', every: '1m', failafter: 2, run }, 'failafter'],
  ])('%s: NS_CONFIG_INVALID at %s', async (_what, options, path) => {
    const err = await failure(() => defineCheck(options as never));
    expect(err.code).toBe('NS_CONFIG_INVALID');
    expect(
      err.issues.map((i) => i.path),
      err.message,
    ).toContain(path);
  });

  it('a check naming a notifier that does not exist: NS_CONFIG_INVALID with a did-you-mean, at client construction', async () => {
    const c = defineCheck({ name: 'c', every: '1m', notify: ['opps'], run });
    const { webhookNotifier } = await import('../../src/index.js');
    const err = await failure(() =>
      createNightshift({ databaseUrl: t.url, schema: t.schema, logger: silentLogger(), checks: [c], watchdog: { notifiers: [webhookNotifier({ name: 'ops', url: 'https://x.example/h', secret: 's' })] } }),
    );
    expect(err.issues).toEqual([{ path: 'c.notify.0', message: 'no notifier named "opps"; did you mean "ops"?' }]);
  });

  it('two checks of one name: NS_DUPLICATE_CHECK', async () => {
    const a = defineCheck({ name: 'same', every: '1m', run });
    const b = defineCheck({ name: 'same', every: '2m', run });
    expect((await failure(() => createNightshift({ databaseUrl: t.url, schema: t.schema, logger: silentLogger(), checks: [a, b] }))).code).toBe('NS_DUPLICATE_CHECK');
  });

  it.each([
    ['an id that is not a number', () => t.client().getAlert('abc'), 'NS_OPTIONS_INVALID'],
    ['an id past bigint', () => t.client().getAlert('99999999999999999999'), 'NS_OPTIONS_INVALID'],
    ['an ack without a reason', () => t.client().ackAlert('1', { reason: '  ' }), 'NS_OPTIONS_INVALID'],
    ['a listing limit of 0', () => t.client().listAlerts({ limit: 0 }), 'NS_OPTIONS_INVALID'],
    ['an alert that does not exist', () => t.client().getAlert('424242'), 'NS_ALERT_NOT_FOUND'],
    ['a check without the watchdog', () => t.client().runCheck('anything'), 'NS_CHECK_NOT_FOUND'],
  ])('%s: %s', async (_what, call, code) => {
    const before = (await t.sql.query(`SELECT count(*)::int AS n FROM "${t.schema}".audit_log`)).rows[0].n;
    expect((await failure(call)).code).toBe(code);
    expect((await t.sql.query(`SELECT count(*)::int AS n FROM "${t.schema}".audit_log`)).rows[0].n).toBe(before);
  });
});
