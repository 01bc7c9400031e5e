import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';

const t = useTestDatabase();
t.migrateBeforeAll();

describe('smoke', () => {
  it('enqueues a job and a worker runs it to completion', async () => {
    const seen: string[] = [];
    let done!: () => void;
    const finished = new Promise<void>((r) => (done = r));
    const hello = defineJob({
      kind: 'hello',
      payload: z.object({ name: z.string() }),
      run: async ({ name }) => {
        seen.push(name);
        done();
      },
    });
    const ns = t.client({ jobs: [hello] });
    const completed = new Promise<void>((resolve) => ns.on((e) => e.type === 'job.completed' && resolve()));
    const { id } = await ns.enqueue(hello, { name: 'world' });
    await ns.start();
    await finished;
    await completed;
    expect(seen).toEqual(['world']);
    const job = await ns.getJob(id);
    expect(job.state).toBe('completed');
    expect(job.attempt).toBe(1);
  });
});
