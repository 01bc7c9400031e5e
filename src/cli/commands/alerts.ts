import type { Command } from 'commander';
import { cliContext, withClient, type GlobalOptions } from '../context.js';
import { UsageError } from '../exit-codes.js';
import { intFlag } from '../parse.js';
import { age, json, out, table } from '../output.js';

/**
 * `nightshift alerts [--open] [--check name]` and `nightshift alerts ack <id> --reason …`: the
 * watchdog's alerts (seed 001's `SELECT … FROM watchdog_alerts WHERE resolved_at IS NULL`), and
 * their acknowledgement, audited.
 */
export function registerAlerts(program: Command): void {
  const alerts = program
    .command('alerts')
    .description("the watchdog's alerts, newest first (ack one with `alerts ack <id> --reason …`)")
    .option('--open', 'only open alerts (acknowledged ones included)')
    .option('--check <name>', "only this check's alerts")
    .option('--limit <n>', 'at most n alerts', '100')
    .option('--before <id>', 'only alerts older than this id (the next page)')
    .option('--json', 'print JSON')
    .action(async (f: { open?: boolean; check?: string; limit: string; before?: string; json?: boolean }, cmd: Command) => {
      const limit = intFlag('limit', f.limit)!;
      const ctx = await cliContext(cmd.optsWithGlobals<GlobalOptions>());
      const list = await withClient(ctx, (ns) => ns.listAlerts({ open: f.open === true, limit, ...(f.check ? { check: f.check } : {}), ...(f.before ? { beforeId: f.before } : {}) }));
      if (f.json) return json(list);
      out(
        table(
          ['id', 'check', 'subject', 'level', 'state', 'opened', 'for', 'message'],
          list.map((a) => [
            a.id,
            a.check,
            a.subject,
            a.level,
            a.state === 'acknowledged' ? `acknowledged by ${a.acknowledgedBy ?? '?'}` : a.state,
            a.openedAt,
            age(a.durationMs),
            a.message.length > 100 ? `${a.message.slice(0, 99)}…` : a.message,
          ]),
        ),
      );
    });

  alerts
    .command('ack <id>')
    .description('acknowledge an open alert: no more reminders (audited)')
    .option('--reason <text>', 'why (required; kept in the audit log)')
    .option('--json', 'print JSON')
    .action(async (id: string, f: { reason?: string; json?: boolean }, cmd: Command) => {
      if (f.reason === undefined || f.reason.trim() === '') throw new UsageError('--reason is required', 'say why, e.g. --reason "known: PSP maintenance until 02:00"');
      const ctx = await cliContext(cmd.optsWithGlobals<GlobalOptions>());
      const r = await withClient(ctx, (ns) => ns.ackAlert(id, { reason: f.reason! }));
      if (f.json) return json(r);
      out(r.changed ? `alert ${id} acknowledged` : `alert ${id} was already acknowledged by ${r.alert.acknowledgedBy ?? '?'}`);
    });
}
