import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { PortUnavailableError } from '../errors.js';
import { BaseService, type ServiceOptions } from '../lifecycle/service.js';

/** What the ops endpoints report. */
export interface OpsSource {
  /** Prometheus text. */
  metrics(): Promise<string>;
  /** Ready to take work: started and not draining. */
  ready(): boolean;
  /** A short status for humans (state, queues). */
  status(): Record<string, unknown>;
}

/** Where the ops endpoints are served, and what they report. */
export interface OpsServerOptions extends ServiceOptions {
  source: OpsSource;
  /** 0 picks a free port. */
  port: number;
  /** Default 127.0.0.1. */
  host?: string;
}

/**
 * `/metrics`, `/healthz` and `/readyz` for orchestrators, on a port of their own (node's http
 * module: three read-only endpoints do not need a framework, and every worker runs this). Binds to
 * 127.0.0.1 unless told otherwise: metrics are not meant for the open network.
 */
export class OpsServer extends BaseService {
  private server: Server | undefined;
  private readonly source: OpsSource;
  private readonly port: number;
  private readonly host: string;

  constructor(o: OpsServerOptions) {
    const host = o.host ?? '127.0.0.1';
    super({ name: `${host}:${o.port}`, kind: 'ops-server', restartable: true, logger: o.logger, clock: o.clock });
    this.source = o.source;
    this.port = o.port;
    this.host = host;
  }

  /** The bound port (useful with port 0). */
  get address(): { host: string; port: number } | undefined {
    const a = this.server?.address();
    return a && typeof a === 'object' ? { host: a.address, port: a.port } : undefined;
  }

  protected async onStart(): Promise<void> {
    const server = createServer((req, res) => void this.handle(req, res));
    this.server = server;
    await new Promise<void>((resolve, reject) => {
      const fail = (err: NodeJS.ErrnoException) => {
        // Never listened: nothing to close on stop.
        this.server = undefined;
        reject(new PortUnavailableError(this.host, this.port, err.code, err));
      };
      server.once('error', fail);
      server.listen(this.port, this.host, () => {
        server.off('error', fail);
        resolve();
      });
    });
  }

  protected async onStop(): Promise<void> {
    const server = this.server;
    if (!server) return;
    this.server = undefined;
    await new Promise<void>((resolve) => {
      server.close(() => resolve());
      server.closeAllConnections();
    });
  }

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    const send = (code: number, body: string, type = 'text/plain; charset=utf-8') => {
      res.writeHead(code, { 'content-type': type, 'cache-control': 'no-store' });
      res.end(body);
    };
    if (req.method !== 'GET' && req.method !== 'HEAD') return send(405, 'method not allowed\n');
    try {
      if (path === '/metrics') return send(200, await this.source.metrics(), 'text/plain; version=0.0.4; charset=utf-8');
      if (path === '/healthz') return send(200, 'ok\n');
      if (path === '/readyz') {
        const ready = this.source.ready();
        return send(ready ? 200 : 503, JSON.stringify({ ready, ...this.source.status() }) + '\n', 'application/json');
      }
      send(404, 'not found: try /metrics, /healthz or /readyz\n');
    } catch (err) {
      send(500, `error: ${err instanceof Error ? err.message : String(err)}\n`);
    }
  }
}
