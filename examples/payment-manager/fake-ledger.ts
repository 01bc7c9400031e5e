import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

/** One transfer as the fake ledger takes it (TigerBeetle's two-phase flags, by name). */
export interface TransferRequest {
  id: string;
  flags: 'pending' | 'post_pending' | 'void_pending';
  /** For `pending`: the amount reserved. */
  amountSatang?: number;
  /** For `post_pending` / `void_pending`: the pending transfer it settles. */
  pendingId?: string;
}

/** TigerBeetle's per-transfer results that the payment manager meets. */
export type TransferResult = 'ok' | 'exists' | 'pending_transfer_not_found' | 'pending_transfer_already_posted' | 'pending_transfer_already_voided';

/** What the fake recorded of one post or void: who sent it (the `x-pid` header) and what it answered. */
export interface SettleRecord {
  pendingId: string;
  flags: 'post_pending' | 'void_pending';
  pid: number;
  result: TransferResult;
}

/**
 * A fake of TigerBeetle's two-phase transfers on 127.0.0.1 (`POST /transfers` with a JSON array,
 * one result per transfer, like `createTransfers`): a transfer id is idempotent (`exists`), and a
 * pending transfer is posted or voided once — a second post with a new id is rejected with
 * `pending_transfer_already_posted`, which is what lets a rerun of the outbox find that its post
 * already went through. State lives in the test process, so worker processes can be killed.
 */
export class FakeLedger {
  readonly pending = new Map<string, { amountSatang: number; state: 'pending' | 'posted' | 'voided' }>();
  readonly settles: SettleRecord[] = [];
  private readonly ids = new Set<string>();
  private server: Server | undefined;
  private readonly held: ServerResponse[] = [];
  /** When set, the next post or void from this pid is applied and then left unanswered (the sender is about to be killed). */
  holdNextFrom: number | undefined;
  /** Resolves when a response was held. */
  private onHeld: (() => void) | undefined;
  /** Delay before answering, so work spreads over several workers. */
  delayMs = 0;
  private readonly arrivals: { pid: number; resolve: () => void }[] = [];

  /** Listens on a free loopback port; resolves with the base URL. */
  async start(): Promise<string> {
    this.server = createServer((req, res) => void this.handle(req, res));
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    const address = this.server.address();
    return `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  }

  /** Resolves once a response from `pid` is held (see {@link holdNextFrom}). */
  waitForHeld(pid: number): Promise<void> {
    this.holdNextFrom = pid;
    return new Promise((resolve) => (this.onHeld = resolve));
  }

  /** Resolves when the next post or void from `pid` arrives (before it is answered). */
  nextSettleFrom(pid: number): Promise<void> {
    return new Promise((resolve) => this.arrivals.push({ pid, resolve }));
  }

  /** How many posts or voids of `pendingId` were applied (the ledger's invariant: at most one). */
  applied(pendingId: string): number {
    return this.settles.filter((s) => s.pendingId === pendingId && s.result === 'ok').length;
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (req.method !== 'POST' || req.url !== '/transfers') return void res.writeHead(404).end();
    let body = '';
    for await (const chunk of req) body += String(chunk);
    const pid = Number(req.headers['x-pid'] ?? 0);
    const transfers = JSON.parse(body) as TransferRequest[];
    const results = transfers.map((t) => this.apply(t, pid));
    if (transfers.some((t) => t.flags !== 'pending')) {
      for (const a of this.arrivals.filter((x) => x.pid === pid)) {
        this.arrivals.splice(this.arrivals.indexOf(a), 1);
        a.resolve();
      }
    }
    if (this.delayMs) await new Promise((r) => setTimeout(r, this.delayMs));
    if (this.holdNextFrom !== undefined && this.holdNextFrom === pid && transfers.some((t) => t.flags !== 'pending')) {
      this.holdNextFrom = undefined;
      this.held.push(res);
      this.onHeld?.();
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(results));
  }

  private apply(t: TransferRequest, pid: number): TransferResult {
    if (this.ids.has(t.id)) return 'exists';
    if (t.flags === 'pending') {
      this.ids.add(t.id);
      this.pending.set(t.id, { amountSatang: t.amountSatang ?? 0, state: 'pending' });
      return 'ok';
    }
    const p = this.pending.get(t.pendingId ?? '');
    let result: TransferResult;
    if (!p) result = 'pending_transfer_not_found';
    else if (p.state === 'posted') result = 'pending_transfer_already_posted';
    else if (p.state === 'voided') result = 'pending_transfer_already_voided';
    else {
      p.state = t.flags === 'post_pending' ? 'posted' : 'voided';
      this.ids.add(t.id);
      result = 'ok';
    }
    this.settles.push({ pendingId: t.pendingId ?? '', flags: t.flags, pid, result });
    return result;
  }

  async stop(): Promise<void> {
    for (const r of this.held) r.destroy();
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
