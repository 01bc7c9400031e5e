import { createServer, type Server } from 'node:http';
import { DashboardNoAuthError, PortUnavailableError } from '../index.js';
import type { Dashboard } from './handler.js';
import { isLoopback } from './loopback.js';

/** Whether an address is this machine only: 127.0.0.0/8, ::1, localhost. */
export { isLoopback };

/**
 * Refuses to listen beyond loopback without authentication (NS_DASHBOARD_NO_AUTH, exit 2 from
 * the CLI): a dashboard open to the network would let anyone retry, cancel and read jobs. `via`
 * words the hint for the caller: `'cli'` points at nightshift.config.ts, `'api'` (the default)
 * at createDashboard's `auth` option.
 */
export function checkBind(host: string | undefined, dashboard: Pick<Dashboard, 'authenticated'>, via: 'cli' | 'api' = 'api'): void {
  const h = host ?? '127.0.0.1';
  if (!isLoopback(h) && !dashboard.authenticated) throw new DashboardNoAuthError(h, via);
}

/** A running standalone dashboard. */
export interface DashboardServer {
  host: string;
  port: number;
  /** The dashboard's URL (with its base path). */
  url: string;
  close(): Promise<void>;
}

/**
 * Serves a dashboard on its own port, with `/healthz` (200 while it runs, no authentication: it
 * says nothing but "ok"). Binds to 127.0.0.1 unless told otherwise; see {@link checkBind}.
 */
export async function serveDashboard(dashboard: Dashboard, o: { port: number; host?: string }): Promise<DashboardServer> {
  const host = o.host ?? '127.0.0.1';
  checkBind(host, dashboard);
  const server: Server = createServer((req, res) => {
    if (req.url === '/healthz' && (req.method === 'GET' || req.method === 'HEAD')) {
      res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' });
      res.end('ok\n');
      return;
    }
    void dashboard.handle(req, res).then((handled) => {
      if (handled) return;
      res.writeHead(dashboard.basePath ? 302 : 404, dashboard.basePath ? { location: `${dashboard.basePath}/` } : { 'content-type': 'text/plain; charset=utf-8' });
      res.end(dashboard.basePath ? '' : 'not found\n');
    });
  });
  await new Promise<void>((resolve, reject) => {
    const fail = (err: NodeJS.ErrnoException) => reject(new PortUnavailableError(host, o.port, err.code, err));
    server.once('error', fail);
    server.listen(o.port, host, () => {
      server.off('error', fail);
      resolve();
    });
  });
  const addr = server.address();
  const port = addr && typeof addr === 'object' ? addr.port : o.port;
  const shown = host.includes(':') ? `[${host}]` : host;
  return {
    host,
    port,
    url: `http://${shown}:${port}${dashboard.basePath}/`,
    async close() {
      await dashboard.close();
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
    },
  };
}
