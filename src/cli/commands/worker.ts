import type { Command } from 'commander';
import { parseRoles } from '../../roles/role-plan.js';
import type { CliRun } from '../cli-io.js';
import { cliContext, type GlobalOptions } from '../context.js';
import { UsageError } from '../exit-codes.js';
import { intFlag } from '../parse.js';
import { untilStopped } from '../stop-requests.js';

/**
 * The roles to run: `--roles`, else NIGHTSHIFT_ROLES, else everything. A value that names no role
 * (`--roles ','`, `--roles ''`) is a usage error — it used to mean "everything", the opposite of
 * what a pod meant to run. NIGHTSHIFT_ROLES empty or blank counts as unset (like a blank
 * required variable), but one that is only commas is a mistake too.
 */
export function rolesOf(flag: string | undefined, env: string | undefined): string[] | undefined {
  if (flag !== undefined) {
    const roles = parseRoles(flag);
    if (!roles) throw new UsageError(`--roles "${flag}" names no role`, 'give comma-separated role names, or leave --roles out to run everything');
    return roles;
  }
  if (env === undefined || env.trim() === '') return undefined;
  const roles = parseRoles(env);
  if (!roles) throw new UsageError(`NIGHTSHIFT_ROLES "${env}" names no role`, 'give comma-separated role names, or unset it to run everything');
  return roles;
}

/**
 * `nightshift worker`: runs the roles given (`--roles a,b` or NIGHTSHIFT_ROLES; everything when
 * none) until a stop is requested (SIGTERM/SIGINT in the binary), then shuts down gracefully: no
 * new claims, running jobs finish within the grace period or are handed back. A second request
 * exits at once.
 */
export function registerWorker(program: Command, run: CliRun): void {
  program
    .command('worker')
    .description('run jobs, schedules and daemons of the given roles until SIGTERM')
    .option('--roles <list>', 'comma-separated roles to run (default: NIGHTSHIFT_ROLES, else everything)')
    .option('--concurrency <n>', 'jobs run at once by this process')
    .option('--metrics-port <n>', 'serve /metrics, /healthz and /readyz on this port')
    .option('--metrics-host <host>', 'address to bind the metrics port to', '127.0.0.1')
    .action(async (opts: { roles?: string; concurrency?: string; metricsPort?: string; metricsHost: string }, cmd: Command) => {
      const ctx = await cliContext(run, cmd.optsWithGlobals<GlobalOptions>());
      const roles = rolesOf(opts.roles, run.env.NIGHTSHIFT_ROLES);
      const concurrency = intFlag('concurrency', opts.concurrency);
      const metricsPort = intFlag('metrics-port', opts.metricsPort);
      if (metricsPort !== undefined && (metricsPort < 0 || metricsPort > 65_535)) throw new UsageError('--metrics-port must be from 0 to 65535');
      const ns = ctx.client({ worker: true, ...(roles ? { roles } : {}), ...(concurrency !== undefined ? { overrides: { concurrency } } : {}) });
      // Listening before start: a stop requested while the process starts is not lost.
      const stopped = untilStopped(run.stops, run.note, async (reason) => {
        run.note(`${reason}: stopping (grace ${ns.options.shutdownGraceMs} ms)…`);
        await ns.stop();
      });
      try {
        // Served before start: /readyz says 503 while the process starts (and again while it drains).
        if (metricsPort !== undefined) {
          const at = await ns.serveOps({ port: metricsPort, host: opts.metricsHost });
          run.note(`metrics on http://${at.host}:${at.port}/metrics`);
        }
        await ns.start();
      } catch (err) {
        // Stopped while starting: the stop's outcome is the command's.
        if (run.stops.requested > 0) {
          run.exitCode = await stopped.done;
          return;
        }
        stopped.cancel();
        await ns.stop().catch(() => undefined);
        throw err;
      }
      const plan = ns.planRoles();
      run.note(`nightshift worker ${ns.processId ?? ''} started: roles ${plan.roles.join(',')}; queues ${ns.workedQueues.join(',') || '(none: enqueue only)'}; concurrency ${ns.options.concurrency}`);
      run.exitCode = await stopped.done;
    });
}
