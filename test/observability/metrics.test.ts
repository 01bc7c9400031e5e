import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';

const t = useTestDatabase();
t.migrateBeforeAll();

async function value(registry: Registry, name: string, labels: Record<string, string> = {}): Promise<number> {
  const base = name.replace(/_(count|sum|bucket)$/, '');
  const metric = (await registry.getMetricsAsJSON()).find((m) => m.name === name || m.name === base);
  if (!metric) return 0;
  const values = (metric as unknown as { values: { value: number; labels: Record<string, string>; metricName?: string }[] }).values;
  return values.filter((v) => (v.metricName === undefined || v.metricName === name) && Object.entries(labels).every(([k, l]) => v.labels[k] === l)).reduce((sum, v) => sum + v.value, 0);
}

describe('Prometheus metrics', () => {
  it('move as jobs flow: enqueued, started, completed, failed, retried, discarded, with run and wait histograms', async () => {
    const ok = defineJob({ kind: 'm-ok', payload: z.object({}), queue: 'mq', run: async () => undefined });
    const flaky = defineJob({
      kind: 'm-flaky',
      payload: z.object({}),
      queue: 'mq',
      maxAttempts: 2,
      backoff: () => 0,
      run: async () => {
        throw new Error('nope');
      },
    });
    const registry = new Registry();
    const ns = t.client({ jobs: [ok, flaky], pollIntervalMs: 50 });
    const metrics = ns.metrics({ registry });
    expect(metrics.registry).toBe(registry);
    await ns.enqueueMany(ok, [{}, {}, {}]);
    await ns.enqueue(flaky, {});
    await ns.enqueue(ok, {}, { dedupeKey: 'once' });
    await ns.enqueue(ok, {}, { dedupeKey: 'once' });
    await ns.start();
    await waitFor('everything settled', async () => (await value(registry, 'nightshift_jobs_discarded_total')) === 1 && (await value(registry, 'nightshift_jobs_completed_total')) === 4);
    const by = { kind: 'm-ok', queue: 'mq' };
    expect(await value(registry, 'nightshift_jobs_enqueued_total', by)).toBe(4);
    expect(await value(registry, 'nightshift_jobs_started_total', by)).toBe(4);
    expect(await value(registry, 'nightshift_jobs_completed_total', by)).toBe(4);
    const f = { kind: 'm-flaky', queue: 'mq' };
    expect(await value(registry, 'nightshift_jobs_failed_total', f)).toBe(2);
    expect(await value(registry, 'nightshift_jobs_retried_total', f)).toBe(1);
    expect(await value(registry, 'nightshift_jobs_discarded_total', f)).toBe(1);
    expect(await value(registry, 'nightshift_job_run_duration_seconds_count', by)).toBe(4);
    expect(await value(registry, 'nightshift_job_wait_seconds_count', by)).toBe(4);
    const text = await metrics.text();
    expect(text).toContain('# TYPE nightshift_jobs_completed_total counter');
    expect(text).toContain('nightshift_pool_connections{state="max"} 10');
  });

  it('report queue depth and the oldest waiting job per queue at scrape time', async () => {
    const job = defineJob({ kind: 'm-depth', payload: z.object({}), queue: 'depth-q', run: async () => undefined });
    const registry = new Registry();
    const ns = t.client({ jobs: [job] });
    ns.metrics({ registry });
    await ns.enqueueMany(job, [{}, {}, {}]);
    await ns.enqueue(job, {}, { delayMs: 3_600_000 });
    expect(await value(registry, 'nightshift_queue_jobs', { queue: 'depth-q', state: 'available' })).toBe(3);
    expect(await value(registry, 'nightshift_queue_jobs', { queue: 'depth-q', state: 'scheduled' })).toBe(1);
    expect(await value(registry, 'nightshift_queue_oldest_available_age_seconds', { queue: 'depth-q' })).toBeGreaterThanOrEqual(0);
  });

  it('never label by job id or dedupe key', async () => {
    const job = defineJob({ kind: 'm-labels', payload: z.object({}), run: async () => undefined });
    const registry = new Registry();
    const ns = t.client({ jobs: [job] });
    ns.metrics({ registry });
    const { id } = await ns.enqueue(job, {}, { dedupeKey: 'customer-4711' });
    await ns.start();
    await waitFor('completed', async () => (await ns.getJob(id)).state === 'completed');
    const text = await registry.metrics();
    expect(text).not.toContain('customer-4711');
    expect(text).not.toMatch(new RegExp(`"${id}"`));
    const labelNames = new Set((await registry.getMetricsAsJSON()).flatMap((m) => (m as unknown as { values: { labels: object }[] }).values.flatMap((v) => Object.keys(v.labels))));
    for (const l of labelNames) expect(['kind', 'queue', 'state', 'schedule', 'reason', 'lease', 'where', 'le']).toContain(l);
  });
});
