import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

/** One delivery the hub received. */
export interface HubDelivery {
  /** `status` (publishStatus) or `notification` (publishPaymentNotification). */
  channel: string;
  key: string;
  body: Record<string, unknown>;
  traceparent: string | undefined;
}

/**
 * A fake of where the payment manager's side effects go, on 127.0.0.1: `POST /status` (the
 * intent's status, the seed's publishStatus) and `POST /notifications` (publishPaymentNotification,
 * a Redis stream in the seed). Each request carries an `idempotency-key`; the hub applies a key
 * once, as a consumer that dedupes does, and keeps every raw delivery so a test sees both.
 */
export class FakeHub {
  readonly deliveries: HubDelivery[] = [];
  readonly applied = new Map<string, HubDelivery>();
  private server: Server | undefined;

  async start(): Promise<string> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    const address = this.server.address();
    return `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  }

  /** Applied deliveries of one channel. */
  appliedOn(channel: string): HubDelivery[] {
    return [...this.applied.values()].filter((d) => d.channel === channel);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const channel = req.url === '/status' ? 'status' : req.url === '/notifications' ? 'notification' : undefined;
    if (req.method !== 'POST' || !channel) return void res.writeHead(404).end();
    let body = '';
    for await (const chunk of req) body += String(chunk);
    const key = String(req.headers['idempotency-key'] ?? '');
    if (!key) return void res.writeHead(400).end('idempotency-key required');
    const d: HubDelivery = { channel, key, body: JSON.parse(body) as Record<string, unknown>, traceparent: req.headers.traceparent as string | undefined };
    this.deliveries.push(d);
    if (!this.applied.has(key)) this.applied.set(key, d);
    res.writeHead(202).end();
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
