import { createServer, type Server } from 'node:http';

/**
 * A fake of the PSP's partner-balance endpoint (seed 002's `driver.getPartnerBalance()`), on
 * 127.0.0.1: `GET /partner-balance` answers `{ balanceSatang }` with what the test set, or a 503
 * while it is "down". Counts its calls.
 */
export class FakePsp {
  balanceSatang = 0;
  down = false;
  calls = 0;
  private server: Server | undefined;

  /** Listens on a free loopback port; resolves with the base URL. */
  async start(): Promise<string> {
    this.server = createServer((req, res) => {
      this.calls++;
      if (req.url !== '/partner-balance') return void res.writeHead(404).end();
      if (this.down) return void res.writeHead(503, { 'content-type': 'application/json' }).end('{"error":"maintenance"}');
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ balanceSatang: this.balanceSatang }));
    });
    await new Promise<void>((resolve) => this.server!.listen(0, '127.0.0.1', resolve));
    const address = this.server.address();
    return `http://127.0.0.1:${typeof address === 'object' && address ? address.port : 0}`;
  }

  async stop(): Promise<void> {
    this.server?.closeAllConnections();
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}
