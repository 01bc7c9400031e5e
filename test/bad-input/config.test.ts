import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { loadConfig } from '../../src/config/load-config.js';
import { defineCheck, defineConfig, defineDaemon, defineJob, defineSchedule, isNightshiftError, webhookNotifier, type NightshiftError } from '../../src/index.js';

// Entry point: the config file (defineConfig and the loader). Every mistake is reported at once,
// each under its path in the file, with code NS_CONFIG_INVALID; nothing connects. The CLI's own
// config tests (typos, unknown kinds in roles, bad cron and zones) are not repeated here.

const job = defineJob({ kind: 'job', payload: z.object({}), run: async () => undefined });
const other = defineJob({ kind: 'job', payload: z.object({}), run: async () => undefined });
const daemon = defineDaemon({ name: 'd', everyMs: 1_000, run: async () => undefined });
const schedule = defineSchedule({ name: 's', every: '1m', job });
const check = defineCheck({ name: 'c', every: '1m', run: () => ({ status: 'ok', message: '' }) });
const hook = webhookNotifier({ url: 'https://alerts.example/hook', secret: 's' });

function problems(config: unknown): NightshiftError {
  try {
    defineConfig(config as never);
  } catch (err) {
    expect(isNightshiftError(err), String(err)).toBe(true);
    return err as NightshiftError;
  }
  throw new Error('expected defineConfig to throw');
}

describe('defineConfig: every mistake under its path', () => {
  it.each([
    ['a job that is not from defineJob', { jobs: [{}] }, 'jobs.0'],
    ['a kind defined twice', { jobs: [job, other] }, 'jobs.1'],
    ['a daemon that is not from defineDaemon', { daemons: [{ name: 'x' }] }, 'daemons.0'],
    ['a daemon defined twice', { daemons: [daemon, daemon] }, 'daemons.1'],
    ['a schedule that is not from defineSchedule', { schedules: [{ name: 'x' }] }, 'schedules.0'],
    ['a schedule defined twice', { jobs: [job], schedules: [schedule, schedule] }, 'schedules.1'],
    ['a schedule of an unknown kind', { jobs: [job], schedules: [defineSchedule({ name: 's2', every: '1m', job: 'jbo' })] }, 'schedules.0.job'],
    ['a role naming an unknown daemon', { roles: { r: { daemons: ['nope'] } } }, 'roles.r.daemons.0'],
    ['a role naming an unknown schedule', { roles: { r: { schedules: ['nope'] } } }, 'roles.r.schedules.0'],
    ['a role with jobs that are not a list', { jobs: [job], roles: { r: { jobs: 'job' } } }, 'roles.r.jobs'],
    ['a misspelt role key', { roles: { r: { job: ['job'] } } }, 'roles.r.job'],
    ['a role name with a space', { roles: { 'two words': {} } }, 'roles.two words'],
    ['a role queue with SQL metacharacters', { roles: { r: { queues: ["q'; --"] } } }, 'roles.r.queues.0'],
    ['worker.concurrency negative', { worker: { concurrency: -1 } }, 'worker.concurrency'],
    ['worker.leaseMs NaN', { worker: { leaseMs: Number.NaN } }, 'worker.leaseMs'],
    ['worker.heartbeatMs not below the lease', { worker: { leaseMs: 2_000, heartbeatMs: 2_000 } }, 'worker.heartbeatMs'],
    ['a queue concurrency of 0', { worker: { queues: { q: { concurrency: 0 } } } }, 'worker.queues.q.concurrency'],
    ['a negative retention', { worker: { retention: { completed: -1 } } }, 'worker.retention.completed'],
    ['a retention for an unknown state', { worker: { retention: { done: 1 } } }, 'worker.retention.done'],
    ['database.schema with SQL metacharacters', { database: { schema: 'x"; DROP SCHEMA public; --' } }, 'database.schema'],
    ['database.maxConnections 0', { database: { maxConnections: 0 } }, 'database.maxConnections'],
    ['a budget of 0 replicas', { database: { budget: { replicas: 0 } } }, 'database.budget.replicas'],
    ['a required variable that is no name', { requiredEnv: ['lower case'] }, 'requiredEnv.0'],
    ['maxPayloadBytes negative', { maxPayloadBytes: -1 }, 'maxPayloadBytes'],
    ['a misspelt top-level key', { job: [job] }, 'job'],
    ['a check that is not from defineCheck', { checks: [{ name: 'x' }] }, 'checks.0'],
    ['a check defined twice', { checks: [check, check] }, 'checks.1'],
    ['a role naming an unknown check', { checks: [check], roles: { r: { checks: ['cc'] } } }, 'roles.r.checks.0'],
    ['a misspelt watchdog key', { watchdog: { notifier: [] } }, 'watchdog.notifier'],
    ['a notifier that is not one', { watchdog: { notifiers: [{ url: 'x' }] } }, 'watchdog.notifiers.0'],
    ['two notifiers of one name', { watchdog: { notifiers: [hook, hook] } }, 'watchdog.notifiers.1'],
    ['a misspelt built-in', { watchdog: { builtins: { queuelag: {} } } }, 'watchdog.builtins.queuelag'],
    ['a misspelt threshold', { watchdog: { builtins: { queueLag: { warnMs: 1 } } } }, 'watchdog.builtins.queueLag.warnMs'],
    ['a threshold that is not a duration', { watchdog: { builtins: { queueLag: { warningMs: '2 minutes' } } } }, 'watchdog.builtins.queueLag.warningMs'],
    ['a percentage out of range', { watchdog: { builtins: { connectionBudget: { criticalPercent: 0 } } } }, 'watchdog.builtins.connectionBudget.criticalPercent'],
    ['a built-in interval below a second', { watchdog: { builtins: { every: 500 } } }, 'watchdog.builtins.every'],
    ['a built-in with failAfter 0', { watchdog: { builtins: { expiredLeases: { failAfter: 0 } } } }, 'watchdog.builtins.expiredLeases.failAfter'],
    ['delivery with 0 attempts', { watchdog: { delivery: { maxAttempts: 0 } } }, 'watchdog.delivery.maxAttempts'],
    ['delivery back-off with a negative delay', { watchdog: { delivery: { backoff: { initialMs: -1 } } } }, 'watchdog.delivery.backoff.initialMs'],
  ])('%s: NS_CONFIG_INVALID at %s', (_what, config, path) => {
    const err = problems(config);
    expect(err.code).toBe('NS_CONFIG_INVALID');
    expect(
      err.issues.map((i) => i.path),
      err.message,
    ).toContain(path);
  });

  it('suggests the check a role meant, and the built-in key a typo meant', () => {
    const err = problems({ checks: [check], roles: { r: { checks: ['nightshift.queue-lags', 'nightshift*'] } }, watchdog: { builtins: { queueLagg: false } } });
    expect(err.issues).toEqual(
      expect.arrayContaining([
        { path: 'roles.r.checks.0', message: 'unknown check "nightshift.queue-lags"; did you mean "nightshift.queue-lag"?' },
        { path: 'roles.r.checks.1', message: 'unknown check "nightshift*"; did you mean "nightshift.*"?' },
        { path: 'watchdog.builtins.queueLagg', message: 'unknown option; did you mean "queueLag"?' },
      ]),
    );
  });

  it('reports every problem at once', () => {
    const err = problems({ jobs: [{}], worker: { concurrency: 0 }, roles: { r: { daemons: ['x'] } }, databse: {} });
    expect(err.issues.map((i) => i.path).sort()).toEqual(['databse', 'jobs.0', 'roles.r.daemons.0', 'worker.concurrency']);
  });

  it.each([
    ['null', null],
    ['a string', 'config'],
  ])('a config that is %s: NS_CONFIG_INVALID', (_what, config) => {
    expect(problems(config).code).toBe('NS_CONFIG_INVALID');
  });
});

describe('loadConfig: files that cannot be a config', () => {
  const dir = mkdtempSync(join(tmpdir(), 'nightshift-bad-config-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const file = (name: string, text: string) => {
    writeFileSync(join(dir, name), text);
    return name;
  };

  it.each([
    ['default-exports a number', 'number.config.mjs', 'export default 42;\n', 'default'],
    ['has no default export', 'none.config.mjs', 'export const config = {};\n', 'default'],
    ['throws while loading', 'throws.config.mjs', "throw new Error('boom at import');\n", 'could not be loaded: boom at import'],
    ['has a syntax error', 'syntax.config.ts', 'export default { jobs: [ };\n', 'could not be loaded'],
    ['default-exports a plain object with mistakes', 'plain.config.mjs', 'export default { worker: { concurency: 2 } };\n', 'worker.concurency'],
  ])('a file that %s: NS_CONFIG_INVALID', async (_what, name, text, says) => {
    const path = file(name, text);
    const err = await loadConfig(path, dir).then(
      () => undefined,
      (e: unknown) => e as NightshiftError,
    );
    expect(err, 'expected loadConfig to throw').toBeDefined();
    expect(err!.code).toBe('NS_CONFIG_INVALID');
    expect(err!.message).toContain(says);
  });
});
