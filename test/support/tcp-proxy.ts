import net from 'node:net';

/**
 * A TCP proxy on a loopback port in front of a real server, to cut a client off for real.
 * `blackhole()` stops forwarding in both directions and leaves connections open, as a network
 * partition does (queries hang rather than fail); `close()` destroys every connection.
 */
export class TcpProxy {
  private readonly server: net.Server;
  private readonly sockets = new Set<net.Socket>();
  private cut = false;
  port = 0;

  constructor(
    private readonly targetHost: string,
    private readonly targetPort: number,
  ) {
    this.server = net.createServer((client) => this.accept(client));
  }

  /** Starts listening; resolves with the port. */
  async listen(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
    return this.port;
  }

  /** Stops forwarding: bytes already in flight and any new ones are dropped, connections stay open. */
  blackhole(): void {
    this.cut = true;
    for (const s of this.sockets) {
      s.unpipe();
      s.removeAllListeners('data');
      s.on('data', () => undefined);
    }
  }

  /** Destroys every connection and stops listening. */
  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: net.Socket): void {
    this.sockets.add(client);
    client.on('close', () => this.sockets.delete(client));
    client.on('error', () => undefined);
    if (this.cut) {
      client.on('data', () => undefined);
      return;
    }
    const upstream = net.connect(this.targetPort, this.targetHost);
    this.sockets.add(upstream);
    upstream.on('close', () => {
      this.sockets.delete(upstream);
      if (!this.cut) client.destroy();
    });
    upstream.on('error', () => undefined);
    client.on('close', () => {
      if (!this.cut) upstream.destroy();
    });
    client.pipe(upstream);
    upstream.pipe(client);
  }
}

/** The same URL pointing at the proxy's port on 127.0.0.1. */
export function viaProxy(url: string, port: number): string {
  const u = new URL(url);
  u.hostname = '127.0.0.1';
  u.port = String(port);
  return u.toString();
}
