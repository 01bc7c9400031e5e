import net from 'node:net';

/** One proxied connection, named by the application_name of its PostgreSQL startup message. */
interface Link {
  client: net.Socket;
  upstream: net.Socket;
  applicationName: string;
  cut: boolean;
}

/** The application_name in a PostgreSQL startup message (`''` when absent or not a startup message). */
export function startupApplicationName(message: Buffer): string {
  // Int32 length, Int32 protocol 3.0 (196608), then key\0value\0 pairs ending in \0.
  if (message.length < 8 || message.readInt32BE(4) !== 196_608) return '';
  const fields = message.subarray(8, message.readInt32BE(0)).toString('utf8').split('\0');
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === 'application_name') return fields[i + 1]!;
  return '';
}

/**
 * A TCP proxy on loopback in front of PostgreSQL that knows which connection is which (by the
 * application_name each client sends in its startup message), so a fault can silently cut one
 * kind of connection — the LISTEN connection of a worker — while the others go on working, as a
 * middlebox that drops an idle flow does. A cut connection stays open; nothing crosses it.
 * New connections pass (the path is fine; the old flow is gone).
 */
export class PgProxy {
  private readonly server: net.Server;
  private readonly links = new Set<Link>();
  port = 0;

  constructor(
    private targetHost: string,
    private targetPort: number,
  ) {
    this.server = net.createServer((client) => this.accept(client));
  }

  /** Starts listening on a free loopback port; resolves with it. */
  async listen(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
    return this.port;
  }

  /** The same URL, through the proxy. */
  url(target: string): string {
    const u = new URL(target);
    u.hostname = '127.0.0.1';
    u.port = String(this.port);
    return u.toString();
  }

  /** Silently cuts every open connection whose application_name matches; returns their names. */
  cut(match: (applicationName: string) => boolean): string[] {
    const cut: string[] = [];
    for (const l of this.links) {
      if (l.cut || !match(l.applicationName)) continue;
      l.cut = true;
      l.client.unpipe(l.upstream);
      l.upstream.unpipe(l.client);
      l.client.removeAllListeners('data');
      l.upstream.removeAllListeners('data');
      l.client.on('data', () => undefined);
      l.upstream.on('data', () => undefined);
      cut.push(l.applicationName);
    }
    return cut;
  }

  /**
   * Points new connections at another server (a promoted standby: what a DNS name, a virtual IP
   * or a managed database's endpoint does on failover) and drops the open ones.
   */
  retarget(host: string, port: number): void {
    this.targetHost = host;
    this.targetPort = port;
    for (const l of this.links) {
      l.client.destroy();
      l.upstream.destroy();
    }
    this.links.clear();
  }

  /** Destroys every connection and stops listening. */
  async close(): Promise<void> {
    for (const l of this.links) {
      l.client.destroy();
      l.upstream.destroy();
    }
    this.links.clear();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private accept(client: net.Socket): void {
    client.on('error', () => undefined);
    let head = Buffer.alloc(0);
    const onHead = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      if (head.length < 4 || head.length < head.readInt32BE(0)) return;
      client.off('data', onHead);
      client.pause();
      const upstream = net.connect(this.targetPort, this.targetHost);
      const link: Link = { client, upstream, applicationName: startupApplicationName(head), cut: false };
      this.links.add(link);
      upstream.on('error', () => undefined);
      // A cut link stays in the set (its server side lingers, as behind a real middlebox) until close().
      const drop = () => {
        if (link.cut) return;
        this.links.delete(link);
        client.destroy();
        upstream.destroy();
      };
      upstream.on('close', drop);
      client.on('close', drop);
      upstream.write(head);
      client.pipe(upstream);
      upstream.pipe(client);
      client.resume();
    };
    client.on('data', onHead);
  }
}
