import type { Command } from 'commander';
import { cliContext, withClient, type GlobalOptions } from '../context.js';
import { age, json, out, table } from '../output.js';

/** `nightshift checks list` and `nightshift checks run <name>`: the watchdog's checks. */
export function registerChecks(program: Command): void {
  const checks = program.command('checks').description("the watchdog's checks: list them, run one now");

  checks
    .command('list')
    .description('every check: timing, last run and its status, next run, open alerts, live processes hosting it')
    .option('--json', 'print JSON')
    .action(async (f: { json?: boolean }, cmd: Command) => {
      const ctx = await cliContext(cmd.optsWithGlobals<GlobalOptions>());
      const list = await withClient(ctx, (ns) => ns.listChecks());
      if (f.json) return json(list);
      out(
        table(
          ['check', 'timing', 'last run', 'status', 'message', 'next run', 'open alerts', 'hosted by'],
          list.map((c) => {
            const worst = c.lastRun?.results.find((r) => r.status === c.lastRun?.status);
            const more = (c.lastRun?.results.length ?? 0) > 1 ? ` (+${c.lastRun!.results.length - 1} more)` : '';
            return [
              c.name,
              c.paused ? `${c.spec} (paused)` : c.spec,
              c.lastRun ? `${age(Date.now() - c.lastRun.at.getTime())} ago` : 'never',
              c.lastRun?.status ?? '',
              worst ? `${worst.subject ? `${worst.subject}: ` : ''}${worst.message.slice(0, 80)}${more}` : '',
              c.nextRun,
              c.openAlerts.critical + c.openAlerts.warning > 0 ? `${c.openAlerts.critical} critical, ${c.openAlerts.warning} warning` : '',
              c.hostedBy,
            ];
          }),
        ),
      );
    });

  checks
    .command('run <name>')
    .description('run a check now in this process and print its results; it counts like a tick (alerts, notifications) unless --dry-run')
    .option('--dry-run', 'only print the results: change no alert, notify nobody')
    .option('--json', 'print JSON')
    .action(async (name: string, f: { dryRun?: boolean; json?: boolean }, cmd: Command) => {
      const ctx = await cliContext(cmd.optsWithGlobals<GlobalOptions>());
      // With the pool size of the config's processes, not of this short-lived command: the
      // connection-budget check judges the fleet by what one of its processes needs.
      const sized = { ...ctx, client: () => ctx.client({ overrides: { maxConnections: ctx.loaded.config.database?.maxConnections ?? 10 } }) };
      const r = await withClient(sized, (ns) => ns.runCheck(name, { dryRun: f.dryRun === true }));
      if (f.json) return json(r);
      out(table(['subject', 'status', 'message'], r.results.map((x) => [x.subject || '-', x.status, x.message])));
      const changes = r.alerts.map((a) => `alert ${a.alertId}${a.subject ? ` (${a.subject})` : ''} ${a.event}`);
      out(`check ${name}: ${r.status} in ${Math.round(r.durationMs)} ms${f.dryRun ? ' (dry run: nothing recorded)' : changes.length ? `; ${changes.join(', ')}` : '; no alert changed'}`);
    });
}
