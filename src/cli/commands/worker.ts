import type { Command } from 'commander';
import { parseRoles } from '../../roles/role-plan.js';
import { cliContext, type GlobalOptions } from '../context.js';
import { intFlag } from '../parse.js';
import { note } from '../output.js';

/**
 * `nightshift worker`: runs the roles given (`--roles a,b` or NIGHTSHIFT_ROLES; everything when
 * none) until SIGTERM/SIGINT, then shuts down gracefully: no new claims, running jobs finish within
 * the grace period or are handed back. A second signal exits at once.
 */
export function registerWorker(program: Command): void {
  program
    .command('worker')
    .description('run jobs, schedules and daemons of the given roles until SIGTERM')
    .option('--roles <list>', 'comma-separated roles to run (default: NIGHTSHIFT_ROLES, else everything)')
    .option('--concurrency <n>', 'jobs run at once by this process')
    .action(async (opts: { roles?: string; concurrency?: string }, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      const ctx = await cliContext(g);
      const roles = parseRoles(opts.roles ?? process.env.NIGHTSHIFT_ROLES);
      const concurrency = intFlag('concurrency', opts.concurrency);
      const ns = ctx.client({ worker: true, ...(roles ? { roles } : {}), ...(concurrency !== undefined ? { overrides: { concurrency } } : {}) });
      let stopping = false;
      const stop = (signal: string) => {
        if (stopping) {
          note(`${signal} again: exiting without waiting`);
          process.exit(1);
        }
        stopping = true;
        note(`${signal}: stopping (grace ${ns.options.shutdownGraceMs} ms)…`);
        ns.stop().then(
          () => process.exit(0),
          () => process.exit(1),
        );
      };
      process.on('SIGTERM', () => stop('SIGTERM'));
      process.on('SIGINT', () => stop('SIGINT'));
      try {
        await ns.start();
      } catch (err) {
        await ns.stop().catch(() => undefined);
        throw err;
      }
      const plan = ns.planRoles();
      note(
        `nightshift worker ${ns.processId ?? ''} started: roles ${plan.roles.join(',')}; queues ${ns.workedQueues.join(',') || '(none: enqueue only)'}; concurrency ${ns.options.concurrency}`,
      );
      await new Promise<void>(() => undefined);
    });
}
