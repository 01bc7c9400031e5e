import { describe, expect, it } from 'vitest';
import { cli, CLI_APP, CLI_ENTRY } from '../support/cli.js';
import { useTestDatabase } from '../support/db.js';
import { startScript } from '../support/processes.js';
import { waitFor } from '../support/wait.js';

const t = useTestDatabase('ops');

async function get(url: string): Promise<{ status: number; body: string }> {
  const res = await fetch(url);
  return { status: res.status, body: await res.text() };
}

describe('/metrics, /healthz and /readyz of a real worker process', () => {
  it('serve metrics, are ready while running, and not ready while draining on SIGTERM', async () => {
    const env = { DATABASE_URL: t.url, NS_SCHEMA: t.schema };
    expect((await cli(['migrate'], { env })).code).toBe(0);
    const proc = startScript(CLI_ENTRY, { ...env, NIGHTSHIFT_LOG_LEVEL: 'warn' }, ['worker', '--roles', 'reports', '--metrics-port', '0'], CLI_APP);
    try {
      await proc.waitForLine('started');
      const port = Number(/metrics on http:\/\/127\.0\.0\.1:(\d+)\/metrics/.exec(proc.output())?.[1]);
      expect(port).toBeGreaterThan(0);
      const base = `http://127.0.0.1:${port}`;
      expect((await get(`${base}/healthz`)).status).toBe(200);
      const ready = await get(`${base}/readyz`);
      expect(ready.status).toBe(200);
      expect(JSON.parse(ready.body)).toMatchObject({ ready: true, state: 'running', queues: ['reports'] });
      const r = await cli(['enqueue', 'long-report', '--json'], { env });
      const { id } = JSON.parse(r.stdout);
      await waitFor('the job to run', async () => (await t.sql.query(`SELECT state FROM "${t.schema}".jobs_all WHERE id = $1`, [id])).rows[0].state === 'running');
      const metrics = await get(`${base}/metrics`);
      expect(metrics.status).toBe(200);
      expect(metrics.body).toContain('nightshift_jobs_started_total{kind="long-report",queue="reports"} 1');
      expect(metrics.body).toMatch(/nightshift_queue_jobs\{queue="reports",state="running"\} 1/);
      // SIGTERM: the job keeps running for the grace period, and meanwhile the process is not ready.
      proc.kill('SIGTERM');
      const draining = await waitFor('/readyz to report draining', async () => {
        const res = await get(`${base}/readyz`).catch(() => undefined);
        return res?.status === 503 ? res : undefined;
      });
      expect(JSON.parse(draining.body)).toMatchObject({ ready: false, state: 'stopping' });
      expect((await get(`${base}/healthz`)).status).toBe(200);
      expect((await proc.exited).code).toBe(0);
      // The job was handed back when the grace period ended.
      expect((await t.sql.query(`SELECT state FROM "${t.schema}".jobs_all WHERE id = $1`, [id])).rows[0].state).toBe('available');
      await expect(get(`${base}/healthz`)).rejects.toThrow();
    } finally {
      proc.kill('SIGKILL');
      await proc.exited;
    }
  });
});
