import { defineJob, discard, hold, retryAfter } from 'nightshift';
// The sample app's jobs: what a team writes in its first week with nightshift.
import { z } from 'zod';
import { billing, mailer } from './providers.js';

export const sendWelcome = defineJob({
  kind: 'send-welcome',
  payload: z.object({ email: z.string().email() }),
  queue: 'mail',
  run: async ({ email }, ctx) => {
    await mailer.send(email, 'Welcome!', ctx.jobId);
  },
});

// #region jobs
export const createAccount = defineJob({
  kind: 'create-account',
  payload: z.object({ userId: z.string(), email: z.string().email() }),
  run: async ({ userId, email }, ctx) => {
    const customerId = await billing.createCustomer(userId, ctx.jobId);
    ctx.log.info({ userId }, 'customer created');
    await ctx.enqueue(sendWelcome, { email });
    return { customerId };
  },
});

export const chargeCard = defineJob({
  kind: 'charge-card',
  payload: z.object({ customerId: z.string(), cents: z.number().int().positive() }),
  queue: 'billing',
  maxAttempts: 5,
  run: async ({ cents }) => {
    if (cents > 100_000) return hold('charges over 1,000.00 need a second pair of eyes');
    // Thrown errors (the provider unreachable) are retried with backoff; explicit results steer the rest.
    const reply = await billing.charge();
    if (reply === 'declined') return discard('card declined');
    if (reply === 'rate-limited') return retryAfter(30_000, 'provider rate limit');
    return { charged: cents };
  },
});
// #endregion

export const dailyDigest = defineJob({
  kind: 'daily-digest',
  payload: z.object({ day: z.string() }),
  queue: 'mail',
  run: async ({ day }, ctx) => {
    await mailer.send('team@example.com', `Digest for ${day}`, ctx.jobId);
  },
});

/** Polls an inbox and schedules its next poll: a chain that never ends on its own. */
export const syncInbox = defineJob({
  kind: 'sync-inbox',
  payload: z.object({ cursor: z.number().int() }),
  run: async ({ cursor }, ctx) => {
    await ctx.enqueue(syncInbox, { cursor: cursor + 1 });
  },
});
