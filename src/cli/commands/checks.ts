import type { Command } from 'commander';
import type { CheckInfo, CheckRunReport } from '../../index.js';
import type { CliRun } from '../cli-io.js';
import { clientCommand, listCommand } from '../client-command.js';
import { withClient } from '../context.js';
import { age, table } from '../output.js';

/** `nightshift checks list` and `nightshift checks run <name>`: the watchdog's checks. */
export function registerChecks(program: Command, run: CliRun): void {
  const checks = program.command('checks').description("the watchdog's checks: list them, run one now");

  listCommand<object, [], CheckInfo[]>(checks.command('list').description('every check: timing, last run and its status, next run, open alerts, live processes hosting it'), run, {
    fetch: (ns) => ns.listChecks(),
    columns: [
      ['check', (c) => c.name],
      ['timing', (c) => (c.paused ? `${c.spec} (paused)` : c.spec)],
      ['last run', (c, now) => (c.lastRun ? `${age(now - c.lastRun.at.getTime())} ago` : 'never')],
      ['status', (c) => c.lastRun?.status ?? ''],
      [
        'message',
        (c) => {
          const worst = c.lastRun?.results.find((r) => r.status === c.lastRun?.status);
          const more = (c.lastRun?.results.length ?? 0) > 1 ? ` (+${c.lastRun!.results.length - 1} more)` : '';
          return worst ? `${worst.subject ? `${worst.subject}: ` : ''}${worst.message.slice(0, 80)}${more}` : '';
        },
      ],
      ['next run', (c) => c.nextRun],
      ['open alerts', (c) => (c.openAlerts.critical + c.openAlerts.warning > 0 ? `${c.openAlerts.critical} critical, ${c.openAlerts.warning} warning` : '')],
      ['hosted by', (c) => c.hostedBy],
    ],
    empty: 'no checks: the watchdog is off (no checks and no watchdog in the config)',
  });

  clientCommand<{ dryRun?: boolean }, [string], CheckRunReport>(
    checks
      .command('run <name>')
      .description('run a check now in this process and print its results; it counts like a tick (alerts, notifications) unless --dry-run')
      .option('--dry-run', 'only print the results: change no alert, notify nobody'),
    run,
    {
      // Its own client, with the pool size of the config's processes, not of this short-lived
      // command: the connection-budget check judges the fleet by what one of its processes needs.
      client: false,
      fetch: (_, { flags: f, args: [name], ctx }) => {
        const sized = { ...ctx, client: () => ctx.client({ overrides: { maxConnections: ctx.loaded.config.database?.maxConnections ?? 10 } }) };
        return withClient(sized, (ns) => ns.runCheck(name, { dryRun: f.dryRun === true }));
      },
      human: (r, { flags: f, args: [name] }) => {
        const changes = r.alerts.map((a) => `alert ${a.alertId}${a.subject ? ` (${a.subject})` : ''} ${a.event}`);
        return [
          table(
            ['subject', 'status', 'message'],
            r.results.map((x) => [x.subject || '-', x.status, x.message]),
          ),
          `check ${name}: ${r.status} in ${Math.round(r.durationMs)} ms${f.dryRun ? ' (dry run: nothing recorded)' : changes.length ? `; ${changes.join(', ')}` : '; no alert changed'}`,
        ];
      },
    },
  );
}
