import { randomBytes } from 'node:crypto';
import type { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { afterEach, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { createLogger, defineJob } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';
import { installTracing, uninstallTracing } from '../support/otel.js';
import { waitFor } from '../support/wait.js';

const t = useTestDatabase();
t.migrateBeforeAll();
afterEach(() => uninstallTracing());

describe('secrets stay out of logs, metrics and spans by default', () => {
  it('a canary in a password field, in an error message and in the database URL appears nowhere', async () => {
    const tag = randomBytes(4).toString('hex');
    const canaries = { payload: `CANARY-PAYLOAD-${tag}`, error: `CANARY-ERROR-${tag}`, url: `CANARY-URL-${tag}` };
    // A login whose password is the canary: the client connects with it in its URL.
    const role = `canary_${tag}`;
    await t.sql.query(`CREATE ROLE ${role} LOGIN SUPERUSER PASSWORD '${canaries.url}'`);
    const url = t.url.replace(/\/\/[^@]*@/, `//${role}:${canaries.url}@`);
    const lines: string[] = [];
    const logger = createLogger({ level: 'trace', destination: { write: (l: string) => lines.push(l) } });
    const exporter = installTracing() as InMemorySpanExporter;
    const job = defineJob({
      kind: 'login-sync',
      payload: z.object({ user: z.string(), password: z.string() }),
      maxAttempts: 2,
      backoff: () => 0,
      run: async ({ password }, ctx) => {
        ctx.log.info({ password }, 'about to call the provider');
        throw new Error(`provider rejected credentials ${canaries.error} for ${password}`);
      },
    });
    const ns = t.client({ databaseUrl: url, jobs: [job], logger, pollIntervalMs: 50 });
    const metrics = ns.metrics();
    const { id } = await ns.enqueue(job, { user: 'ada', password: canaries.payload });
    await ns.start();
    await waitFor('discarded', async () => (await ns.getJob(id)).state === 'discarded');
    const stored = await ns.getJob(id);
    // The error is kept with the job (for `jobs show`), where access is controlled…
    expect(stored.errors[0]!.message).toContain(canaries.error);
    await ns.stop();
    // …and nowhere else.
    const surfaces = {
      logs: lines.join('\n'),
      metrics: await metrics.text(),
      spans: JSON.stringify(exporter.getFinishedSpans().map((s) => ({ name: s.name, attributes: s.attributes, status: s.status, events: s.events, links: s.links }))),
    };
    expect(surfaces.logs).toContain('job.failed');
    expect(surfaces.spans).toContain('process default');
    for (const [where, text] of Object.entries(surfaces)) {
      for (const [what, canary] of Object.entries(canaries)) expect(text.includes(canary), `${what} canary in ${where}`).toBe(false);
    }
  });
});
