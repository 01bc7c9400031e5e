import { defineJob, type Nightshift } from 'nightshift';
// What a doc code block may use without declaring it (CONTRIBUTING.md, "Code blocks in docs"):
// test/docs/compile-blocks.ts imports these names into every block that does not declare them
// itself. Kept small on purpose — a block a reader copies should need its own imports plus, at
// most, these two: the job and the client every guide starts from (README's "Use it").
// Only type-checked, never run.
import { z } from 'zod';

/** The job of README's "Use it" and docs/jobs.md. */
export const sendReceipt = defineJob({
  kind: 'send-receipt',
  payload: z.object({ orderId: z.string(), email: z.string().email() }),
  run: async () => {},
});

/** A client: `createNightshift({ databaseUrl: process.env.DATABASE_URL, jobs: [sendReceipt] })`. */
export declare const ns: Nightshift;
