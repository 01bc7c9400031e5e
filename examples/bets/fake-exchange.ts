import { createServer, type IncomingMessage, type Server } from 'node:http';

/**
 * A fake of the exchange and the Vault contract the operator talks to, on 127.0.0.1: escrow
 * (`openBuy`/`openSell`) that reverts like the contract does, fill-or-kill orders against a fixed
 * amount of liquidity, and settlement. It records every call, so tests can check that no bet was
 * escrowed twice.
 */
export class FakeExchange {
  /** Escrow calls per order id (a second one would be a double escrow). */
  readonly escrows = new Map<string, number>();
  readonly settled = new Map<string, 'filled' | 'empty'>();
  /** Orders whose escrow settleEmpty released. */
  readonly released = new Set<string>();
  /** Orders whose CLOB call never answers. */
  readonly hangOrders = new Set<string>();
  private server: Server | undefined;
  private balances: Map<string, number>;

  constructor(
    balances: Record<string, number>,
    /** Shares available per market at any price: a bigger FOK order is killed. */
    private readonly liquidity: number,
  ) {
    this.balances = new Map(Object.entries(balances));
  }

  /** Listens on a free loopback port; resolves with the base URL. */
  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      void body(req).then((input) => {
        const [status, reply] = this.route(req.url ?? '', input);
        if (status === 0) return; // never answered
        res.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(reply));
      });
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    const address = this.server.address();
    return `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }

  private route(url: string, input: Record<string, unknown>): [number, unknown] {
    const orderId = String(input.orderId);
    if (url === '/vault/open') {
      this.escrows.set(orderId, (this.escrows.get(orderId) ?? 0) + 1);
      if (this.escrows.get(orderId)! > 1) return [409, { error: 'execution reverted: OrderAlreadyOpen()' }];
      const user = String(input.userId);
      const amount = Number(input.amount);
      const balance = this.balances.get(user) ?? 0;
      if (balance < amount) return [409, { error: 'execution reverted: InsufficientBalance()' }];
      this.balances.set(user, balance - amount);
      return [200, { ok: true }];
    }
    if (url === '/clob/order') {
      // An order that never returns: the operator is stuck after escrow (killed there by a test).
      if (this.hangOrders.has(orderId)) return [0, undefined];
      return [200, { filled: Number(input.size) <= this.liquidity }];
    }
    if (url === '/vault/settle') {
      // Settling twice changes nothing (the real Vault reverts): the first settlement stands.
      const before = this.settled.get(orderId);
      if (before) return [200, { settled: before }];
      this.settled.set(orderId, input.filled ? 'filled' : 'empty');
      if (!input.filled) this.released.add(orderId);
      return [200, { settled: this.settled.get(orderId) }];
    }
    return [404, { error: 'not found' }];
  }
}

async function body(req: IncomingMessage): Promise<Record<string, unknown>> {
  let text = '';
  for await (const chunk of req) text += String(chunk);
  return text ? (JSON.parse(text) as Record<string, unknown>) : {};
}
