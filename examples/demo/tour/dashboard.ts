// The tour's dashboard: one page per system, all on one listener on 127.0.0.1. Each system lives
// in its own schema, and a dashboard shows one client's schema, so there is one createDashboard
// per system, mounted under /<system>/, and a short index at / linking them. Each client is built
// from the system's own definitions (its nightshift.config.ts), so the dashboard's actions work:
// resolve a held payment, rerun a settlement, trigger a schedule.
import { createServer, type Server } from 'node:http';
import { esc } from '../../../src/dashboard/html.js';
import { checkBind, createDashboard, type Dashboard } from '../../../src/dashboard/index.js';
import { createNightshift, type Nightshift, type NightshiftOptions } from '../../../src/index.js';
import { silentLogger } from '../../../src/telemetry/logger.js';

/** One system's page: its path segment, its title and its client's options. */
export interface DashboardSystem {
  id: string;
  title: string;
  options: NightshiftOptions;
}

/** The running dashboard. */
export interface TourDashboard {
  url: string;
  /** The URL of one system's dashboard. */
  urlOf(id: string): string;
  close(): Promise<void>;
}

/** Serves one dashboard per system on 127.0.0.1 (a free port unless `port` is given). */
export async function serveTourDashboard(systems: DashboardSystem[], port = 0): Promise<TourDashboard> {
  const host = '127.0.0.1';
  const mounted: { system: DashboardSystem; ns: Nightshift; dashboard: Dashboard }[] = systems.map((system) => {
    // A small pool of its own with a statement timeout, as docs/dashboard.md advises.
    const ns = createNightshift({ ...system.options, maxConnections: 3, statementTimeoutMs: 5_000, registerProcess: false, maintenance: false, logger: silentLogger() });
    const dashboard = createDashboard(ns, { basePath: `/${system.id}` });
    checkBind(host, dashboard); // no authentication: loopback only
    return { system, ns, dashboard };
  });
  const index = () =>
    `<!doctype html><meta charset="utf-8"><title>nightshift tour</title><body style="font-family:sans-serif;max-width:40em;margin:3em auto">` +
    `<h1>nightshift tour</h1><p>Four seed systems, each in its own schema of one PostgreSQL:</p><ul>` +
    mounted.map((m) => `<li><a href="/${esc(m.system.id)}/">${esc(m.system.title)}</a> (schema <code>${esc(m.system.options.schema ?? '')}</code>)</li>`).join('') +
    `</ul></body>`;
  const server: Server = createServer((req, res) => {
    void (async () => {
      for (const m of mounted) if (await m.dashboard.handle(req, res)) return;
      if (req.url === '/' || req.url === '') return void res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' }).end(index());
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found\n');
    })();
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, host, () => resolve());
  });
  const addr = server.address();
  const base = `http://${host}:${addr && typeof addr === 'object' ? addr.port : port}`;
  return {
    url: `${base}/`,
    urlOf: (id) => `${base}/${id}/`,
    async close() {
      await Promise.all(mounted.map((m) => m.dashboard.close()));
      await new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      });
      await Promise.all(mounted.map((m) => m.ns.stop()));
    },
  };
}
