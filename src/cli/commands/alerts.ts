import type { Command } from 'commander';
import type { AlertRecord } from '../../index.js';
import type { CliRun } from '../cli-io.js';
import { clientCommand, listCommand } from '../client-command.js';
import { UsageError } from '../exit-codes.js';
import { age } from '../output.js';
import { intFlag } from '../parse.js';

/**
 * `nightshift alerts [--open] [--check name]` and `nightshift alerts ack <id> --reason …`: the
 * watchdog's alerts (seed 001's `SELECT … FROM watchdog_alerts WHERE resolved_at IS NULL`), and
 * their acknowledgement, audited.
 */
export function registerAlerts(program: Command, run: CliRun): void {
  const alerts = listCommand<{ open?: boolean; check?: string; limit: string; before?: string }, [], AlertRecord[]>(
    program
      .command('alerts')
      .description("the watchdog's alerts, newest first (ack one with `alerts ack <id> --reason …`)")
      .option('--open', 'only open alerts (acknowledged ones included)')
      .option('--check <name>', "only this check's alerts")
      .option('--limit <n>', 'at most n alerts', '100')
      .option('--before <id>', 'only alerts older than this id (the next page)'),
    run,
    {
      check: (f) => void intFlag('limit', f.limit),
      fetch: (ns, { flags: f }) => ns.listAlerts({ open: f.open === true, limit: intFlag('limit', f.limit)!, ...(f.check ? { check: f.check } : {}), ...(f.before ? { beforeId: f.before } : {}) }),
      columns: [
        ['id', (a) => a.id],
        ['check', (a) => a.check],
        ['subject', (a) => a.subject],
        ['level', (a) => a.level],
        ['state', (a) => (a.state === 'acknowledged' ? `acknowledged by ${a.acknowledgedBy ?? '?'}` : a.state)],
        ['opened', (a) => a.openedAt],
        ['for', (a) => age(a.durationMs)],
        ['message', (a) => (a.message.length > 100 ? `${a.message.slice(0, 99)}…` : a.message)],
      ],
      empty: ({ flags: f }) => `no ${f.open ? 'open ' : ''}alerts${f.check ? ` of check ${f.check}` : ''}`,
    },
  );

  clientCommand<{ reason?: string }, [string], { alert: AlertRecord; changed: boolean }>(
    alerts.command('ack <id>').description('acknowledge an open alert: no more reminders (audited)').option('--reason <text>', 'why (required; kept in the audit log)'),
    run,
    {
      check: (f) => {
        if (f.reason === undefined || f.reason.trim() === '') throw new UsageError('--reason is required', 'say why, e.g. --reason "known: PSP maintenance until 02:00"');
      },
      fetch: (ns, { flags: f, args: [id] }) => ns.ackAlert(id, { reason: f.reason! }),
      human: (r, { args: [id] }) => [r.changed ? `alert ${id} acknowledged` : `alert ${id} was already acknowledged by ${r.alert.acknowledgedBy ?? '?'}`],
    },
  );
}
