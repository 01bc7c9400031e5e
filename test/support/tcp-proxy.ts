import net from 'node:net';

/** One proxied connection, named by the application_name of its PostgreSQL startup message. */
interface Link {
  client: net.Socket;
  upstream: net.Socket;
  /** `''` until the startup message has passed, and for protocols that send none. */
  applicationName: string;
  cut: boolean;
}

/** PostgreSQL's startup message (Int32 length, Int32 protocol 3.0) is at most this long in practice. */
const MAX_STARTUP_BYTES = 10_000;

/** The application_name in a PostgreSQL startup message (`''` when absent or not a startup message). */
export function startupApplicationName(message: Buffer): string {
  // Int32 length, Int32 protocol 3.0 (196608), then key\0value\0 pairs ending in \0.
  if (message.length < 8 || message.readInt32BE(4) !== 196_608) return '';
  const fields = message.subarray(8, message.readInt32BE(0)).toString('utf8').split('\0');
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === 'application_name') return fields[i + 1]!;
  return '';
}

/**
 * A TCP proxy on a loopback port in front of a real server, to cut a client off for real, the way
 * a network does: a cut connection stays open and nothing crosses it (queries hang rather than
 * fail). It knows PostgreSQL connections by the application_name of their startup message, so a
 * fault can cut one kind — a worker's LISTEN connection — while the others go on working, as a
 * middlebox that drops an idle flow does (`cut`); or cut every connection, new ones included, as
 * a partition does (`blackhole`); or point it at another server, as a failover does (`retarget`).
 * Any other protocol passes too (its connections have no name).
 */
export class TcpProxy {
  private readonly server: net.Server;
  private readonly links = new Set<Link>();
  /** Connections accepted while partitioned: held open, never forwarded. */
  private readonly stray = new Set<net.Socket>();
  private partitioned = false;
  port = 0;

  constructor(
    private targetHost: string,
    private targetPort: number,
  ) {
    this.server = net.createServer((client) => this.accept(client));
  }

  /** A proxy in front of the server of `url` (host and port). */
  static for(url: string): TcpProxy {
    const u = new URL(url);
    return new TcpProxy(u.hostname, Number(u.port));
  }

  /** Starts listening on a free loopback port; resolves with it. */
  async listen(): Promise<number> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as net.AddressInfo).port;
    return this.port;
  }

  /** The same URL, through the proxy (127.0.0.1 and the proxy's port). */
  url(target: string): string {
    const u = new URL(target);
    u.hostname = '127.0.0.1';
    u.port = String(this.port);
    return u.toString();
  }

  /** Silently cuts every open connection whose application_name matches; returns their names. New connections still pass. */
  cut(match: (applicationName: string) => boolean): string[] {
    const cut: string[] = [];
    for (const l of this.links) {
      if (l.cut || !match(l.applicationName)) continue;
      l.cut = true;
      l.client.unpipe(l.upstream);
      l.upstream.unpipe(l.client);
      swallow(l.client);
      swallow(l.upstream);
      cut.push(l.applicationName);
    }
    return cut;
  }

  /** A partition: every connection stops forwarding, and new ones are accepted but never forwarded. */
  blackhole(): void {
    this.partitioned = true;
    this.cut(() => true);
  }

  /**
   * Points new connections at another server (a promoted standby: what a DNS name, a virtual IP
   * or a managed database's endpoint does on failover) and drops the open ones.
   */
  retarget(host: string, port: number): void {
    this.targetHost = host;
    this.targetPort = port;
    this.partitioned = false;
    this.destroyAll();
  }

  /** Destroys every connection and stops listening. */
  async close(): Promise<void> {
    this.destroyAll();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private destroyAll(): void {
    for (const l of this.links) {
      l.client.destroy();
      l.upstream.destroy();
    }
    this.links.clear();
    for (const s of this.stray) s.destroy();
    this.stray.clear();
  }

  private accept(client: net.Socket): void {
    client.on('error', () => undefined);
    if (this.partitioned) {
      this.stray.add(client);
      client.on('close', () => this.stray.delete(client));
      swallow(client);
      return;
    }
    const upstream = net.connect(this.targetPort, this.targetHost);
    upstream.on('error', () => undefined);
    const link: Link = { client, upstream, applicationName: '', cut: false };
    this.links.add(link);
    // A cut link stays open (its server side lingers, as behind a real middlebox) until close().
    const drop = () => {
      if (link.cut) return;
      this.links.delete(link);
      client.destroy();
      upstream.destroy();
    };
    upstream.on('close', drop);
    client.on('close', drop);
    // The name is read from the first message as it passes; forwarding does not wait for it.
    let head = Buffer.alloc(0);
    const sniff = (chunk: Buffer) => {
      head = Buffer.concat([head, chunk]);
      const complete = head.length >= 8 && (head.readInt32BE(4) !== 196_608 || head.length >= head.readInt32BE(0));
      if (!complete && head.length < MAX_STARTUP_BYTES) return;
      client.off('data', sniff);
      link.applicationName = startupApplicationName(head);
    };
    client.on('data', sniff);
    client.pipe(upstream);
    upstream.pipe(client);
  }
}

/** Drops whatever arrives on `s` from now on, leaving it open. */
function swallow(s: net.Socket): void {
  s.removeAllListeners('data');
  s.on('data', () => undefined);
}
