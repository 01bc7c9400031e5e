import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

/** How the fake PSP answers an inquiry about a confirmed payment. */
export type InquiryOutcome = 'SUCCESS' | 'FAILED' | 'PENDING';

/**
 * A fake of the PSP (seed 002's IPPS driver) on 127.0.0.1:
 * - `GET /partner-balance` answers `{ balanceSatang }` (`driver.getPartnerBalance()`), 503 while `down`;
 * - `POST /query { rqUID, intentId, amountSatang }` → `{ status: 'ok' | 'declined' }`, 503 for the
 *   next `queryFailures` calls;
 * - `POST /confirm { rqUID, intentId }` → `{ status: 'accepted' }`; with `hangConfirmFor` set to an
 *   intent, it records the confirm and never answers (the worker is about to be killed: the orphan
 *   rqUID of the seed's MANUAL_REVIEW);
 * - `POST /inquire { rqUID }` → `{ status }` from `outcomes` (default SUCCESS).
 * Every call is recorded with its body.
 */
export class FakePsp {
  balanceSatang = 0;
  down = false;
  calls = 0;
  queryFailures = 0;
  readonly declined = new Set<string>();
  readonly outcomes = new Map<string, InquiryOutcome>();
  hangConfirmFor: string | undefined;
  readonly requests: { path: string; body: Record<string, unknown> }[] = [];
  private readonly hung: ServerResponse[] = [];
  private readonly confirmed = new Map<string, string>();
  private server: Server | undefined;

  /** Listens on a free loopback port; resolves with the base URL. */
  async start(): Promise<string> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    const address = this.server.address();
    return `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  }

  /** Calls to one endpoint. */
  calledOn(path: string): { path: string; body: Record<string, unknown> }[] {
    return this.requests.filter((r) => r.path === path);
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    this.calls++;
    const json = (status: number, body: unknown) => void res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    if (req.method === 'GET' && req.url === '/partner-balance') {
      return this.down ? json(503, { error: 'maintenance' }) : json(200, { balanceSatang: this.balanceSatang });
    }
    let raw = '';
    for await (const chunk of req) raw += String(chunk);
    const body = (raw ? JSON.parse(raw) : {}) as Record<string, string>;
    this.requests.push({ path: req.url ?? '', body });
    switch (req.url) {
      case '/query':
        if (this.queryFailures > 0) {
          this.queryFailures--;
          return json(503, { error: 'try again' });
        }
        return json(200, { status: this.declined.has(body.intentId!) ? 'declined' : 'ok' });
      case '/confirm':
        this.confirmed.set(body.rqUID!, body.intentId!);
        if (this.hangConfirmFor === body.intentId) {
          this.hung.push(res);
          return;
        }
        return json(200, { status: 'accepted' });
      case '/inquire': {
        const intentId = this.confirmed.get(body.rqUID!);
        if (!intentId) return json(404, { error: 'unknown rqUID' });
        return json(200, { status: this.outcomes.get(intentId) ?? 'SUCCESS' });
      }
      default:
        return void res.writeHead(404).end();
    }
  }

  async stop(): Promise<void> {
    for (const r of this.hung) r.destroy();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
