// Doc examples run as written, not only compile: README's "Use it" enqueues its job and a worker
// runs it, against this file's schema of the test database; every config-file example passes
// defineConfig's validation (references between roles, jobs, schedules and daemons included).
import { readFileSync } from 'node:fs';
import * as nightshift from 'nightshift';
import type { JobOptions, Nightshift, NightshiftOptions, PayloadSchema } from 'nightshift';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';
import { docBlocks, docFiles, ROOT, TYPESCRIPT } from './doc-blocks.js';
import { blockUnder, runBlock } from './run-block.js';

describe("README's Use it", () => {
  const t = useTestDatabase('readme');

  it('migrates, enqueues its job and runs it with a worker', async () => {
    const block = blockUnder(docBlocks('README.md'), readFileSync(`${ROOT}README.md`, 'utf8'), '## Use it');
    const clients: Nightshift[] = [];
    const runs: { payload: unknown; jobId: string; attempt: number }[] = [];
    const modules = {
      zod: { z },
      nightshift: {
        ...nightshift,
        // The block's own options, on this file's schema, with a silent logger; stopped after the test.
        createNightshift: (options: NightshiftOptions) => {
          const ns = t.client(options);
          clients.push(ns);
          return ns;
        },
        // The block's handler, as written, with a record of each call.
        defineJob: <S extends PayloadSchema>(options: JobOptions<S>) =>
          nightshift.defineJob({
            ...options,
            run: (payload, ctx) => {
              runs.push({ payload, jobId: ctx.jobId, attempt: ctx.attempt });
              return options.run(payload, ctx);
            },
          }),
      },
    };

    await runBlock(block, modules, { DATABASE_URL: t.url });

    expect(clients).toHaveLength(1);
    const ns = clients[0]!;
    const [job] = await waitFor('the README job to complete', async () => {
      const jobs = await ns.listJobs({ kind: 'send-receipt' });
      return jobs[0]?.state === 'completed' ? jobs : undefined;
    });
    expect(job).toMatchObject({ kind: 'send-receipt', dedupeKey: 'receipt:o-1', attempt: 1, payload: { orderId: 'o-1', email: 'ada@example.com' } });
    expect(runs).toEqual([{ payload: { orderId: 'o-1', email: 'ada@example.com' }, jobId: job!.id, attempt: 1 }]);
    await ns.stop();
  });
});

describe('config-file examples', () => {
  const configs = docFiles()
    .flatMap(docBlocks)
    .filter((b) => TYPESCRIPT.has(b.lang) && !b.region && b.code.includes('export default defineConfig('));

  it('there are some', () => {
    expect(configs.map((b) => b.doc)).toEqual(expect.arrayContaining(['README.md', 'docs/config.md']));
  });

  it.each(configs.map((b) => [`${b.doc}:${b.fenceLine}`, b] as const))('%s passes defineConfig', async (_label, block) => {
    const exports = await runBlock(block, { zod: { z }, nightshift });
    const config = exports.default as nightshift.NightshiftConfig;
    expect(config.jobs?.length).toBeGreaterThan(0);
    expect(Object.keys(config.roles ?? {}).length).toBeGreaterThan(0);
  });
});
