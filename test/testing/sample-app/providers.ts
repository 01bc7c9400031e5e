// The sample app's outside world, faked in memory as its tests would: a mailer and a payment
// provider. Jobs pass their job id as the idempotency key, as seed 003 does with its outbox id.

/** Mail the app sent, newest last. */
export const mailer = {
  sent: [] as { to: string; subject: string; key: string }[],
  async send(to: string, subject: string, key: string): Promise<void> {
    // A retried job sends once: the provider dedupes on the key.
    if (!this.sent.some((m) => m.key === key)) this.sent.push({ to, subject, key });
  },
};

/** What the payment provider answers to a charge. */
export type ChargeReply = 'ok' | 'declined' | 'rate-limited' | 'unreachable';

/** A payment provider whose next replies the test sets. */
export const billing = {
  customers: new Map<string, string>(),
  replies: [] as ChargeReply[],
  async createCustomer(userId: string, key: string): Promise<string> {
    const id = this.customers.get(key) ?? `cus_${userId}`;
    this.customers.set(key, id);
    return id;
  },
  async charge(): Promise<'ok' | 'declined' | 'rate-limited'> {
    const reply = this.replies.shift() ?? 'ok';
    if (reply === 'unreachable') throw new Error('payment provider unreachable (ECONNRESET)');
    return reply;
  },
};
