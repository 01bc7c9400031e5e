import type { Command } from 'commander';
import { checkBind, createDashboard, serveDashboard } from '../../dashboard/index.js';
import type { CliRun } from '../cli-io.js';
import { cliContext, type GlobalOptions } from '../context.js';
import { UsageError } from '../exit-codes.js';
import { intFlag } from '../parse.js';
import { untilStopped } from '../stop-requests.js';

/**
 * `nightshift dashboard`: serves the web dashboard (and `/healthz`) until SIGTERM, on 127.0.0.1
 * unless `--host` says otherwise — and anywhere else only with `dashboard.auth` configured
 * (NS_DASHBOARD_NO_AUTH, exit 2). Its queries run on a small pool of its own under a statement
 * timeout.
 */
export function registerDashboard(program: Command, run: CliRun): void {
  program
    .command('dashboard')
    .description('serve the web dashboard until SIGTERM (127.0.0.1:4000 by default)')
    .option('--port <n>', "port to listen on (default: the config's dashboard.port, else 4000; 0 picks a free one)")
    .option('--host <host>', "address to bind (default: the config's dashboard.host, else 127.0.0.1)")
    .action(async (opts: { port?: string; host?: string }, cmd: Command) => {
      const ctx = await cliContext(run, cmd.optsWithGlobals<GlobalOptions>());
      const cfg = ctx.loaded.config.dashboard ?? {};
      const port = intFlag('port', opts.port) ?? cfg.port ?? 4_000;
      if (port < 0 || port > 65_535) throw new UsageError('--port must be from 0 to 65535');
      const host = opts.host ?? cfg.host ?? '127.0.0.1';
      const ns = ctx.client({ overrides: { maxConnections: 4, statementTimeoutMs: cfg.statementTimeoutMs ?? 5_000 } });
      try {
        const dashboard = createDashboard(ns, {
          ...(cfg.auth ? { auth: cfg.auth } : {}),
          ...(cfg.anonymousPermissions ? { anonymousPermissions: cfg.anonymousPermissions } : {}),
          ...(cfg.basePath ? { basePath: cfg.basePath } : {}),
          ...(cfg.secret ? { secret: cfg.secret } : {}),
          ...(cfg.searchWindow ? { searchWindow: cfg.searchWindow } : {}),
          ...(cfg.countCap ? { countCap: cfg.countCap } : {}),
          logger: ns.logger,
        });
        // Before connecting: an unsafe bind is a configuration error, whatever the database says.
        checkBind(host, dashboard, 'cli');
        await ns.checkMigrated();
        const server = await serveDashboard(dashboard, { port, host });
        const stopped = untilStopped(run.stops, run.note, async (reason) => {
          run.note(`${reason}: stopping the dashboard…`);
          await server.close();
          await ns.stop();
        });
        run.note(`nightshift dashboard on ${server.url}${dashboard.authenticated ? '' : ' (no authentication: this machine only)'}`);
        run.exitCode = await stopped.done;
      } catch (err) {
        await ns.stop().catch(() => undefined);
        throw err;
      }
    });
}
