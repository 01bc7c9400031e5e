import type { Command } from 'commander';
import type { AuditRecord, BudgetReport } from '../../index.js';
import type { CliRun } from '../cli-io.js';
import { clientCommand, listCommand } from '../client-command.js';
import { EXIT, UsageError } from '../exit-codes.js';
import { age, ago } from '../output.js';
import { intFlag } from '../parse.js';

/** The names in a registry field (older processes may lack it). */
function names(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

/** What a process runs now, from its registry info: running jobs of its concurrency, and its consumers (a singleton hosted but led elsewhere in brackets). */
function running(info: Record<string, unknown>): { jobs: string; consumers: string } {
  const active = new Set(names(info.activeConsumers));
  return {
    jobs: typeof info.running === 'number' ? `${info.running}/${String(info.concurrency ?? '?')}` : '',
    consumers: names(info.consumers)
      .map((c) => (active.has(c) || info.activeConsumers === undefined ? c : `(${c})`))
      .join(','),
  };
}

/** `nightshift workers`, `stats`, `budget` and `audit`: read-only views. */
export function registerStatus(program: Command, run: CliRun): void {
  listCommand(program.command('workers').description('live processes: host, pid, roles, version, last seen, and what each runs now (jobs, queues, daemons it leads, stream consumers)'), run, {
    fetch: (ns) => ns.listProcesses(),
    columns: [
      ['id', (p) => p.id],
      ['host', (p) => p.host],
      ['pid', (p) => p.pid],
      ['roles', (p) => p.roles.join(',')],
      ['version', (p) => p.version],
      ['started', (p, now) => ago(p.startedAt, now)],
      ['last seen', (p) => `${age(p.secondsSinceSeen * 1000)} ago`],
      ['running', (p) => running(p.info).jobs],
      ['queues', (p) => names(p.info.queues).join(',')],
      ['leads', (p) => names(p.info.leading).join(',')],
      ['consumers', (p) => running(p.info).consumers],
    ],
    empty: 'no live processes: start one with nightshift worker',
  });

  listCommand(program.command('stats').description('job counts per queue, kind and state'), run, {
    fetch: (ns) => ns.stats(),
    columns: [
      ['queue', (s) => s.queue],
      ['kind', (s) => s.kind],
      ['state', (s) => s.state],
      ['count', (s) => s.count],
      ['oldest waiting', (s, now) => ago(s.oldestAvailable, now)],
    ],
    empty: 'no jobs',
  });

  clientCommand<{ replicas: string }, [], BudgetReport>(
    program.command('budget').description("connections one process and the fleet need, against the server's max_connections").option('--replicas <n>', 'processes in the fleet', '1'),
    run,
    {
      check: (f) => {
        if (intFlag('replicas', f.replicas)! < 1) throw new UsageError('--replicas must be at least 1');
      },
      client: false,
      fetch: async (_ns, { flags: f, ctx }) => {
        // The budget of a worker process as the config defines it (not of this short-lived CLI client).
        const worker = ctx.client({ worker: true });
        return worker.connectionBudget({ replicas: intFlag('replicas', f.replicas)! }).finally(() => worker.stop());
      },
      human: (report) => [
        `per process: ${report.perProcess.total} (shared pool ${report.perProcess.pool} + listener ${report.perProcess.listener})`,
        `fleet of ${report.replicas}: ${report.fleet}`,
        `server: max_connections ${report.server.maxConnections} − ${report.server.reserved} reserved = ${report.server.available} (in use now: ${report.server.inUse})`,
        report.ok ? `ok: ${report.headroom} connections to spare` : `OVER BUDGET by ${-report.headroom}: lower maxConnections or replicas, or raise max_connections`,
      ],
      // The same code as a worker refusing to start over budget (NS_BUDGET_EXCEEDED): a configuration error.
      exitCode: (report) => (report.ok ? EXIT.ok : EXIT.usage),
    },
  );

  listCommand<{ target?: string; limit: string }, [], AuditRecord[]>(
    program.command('audit').description('manual actions: who, what, why, when').option('--target <target>', 'e.g. job:42 or queue:mail').option('--limit <n>', 'at most n entries', '50'),
    run,
    {
      fetch: (ns, { flags: f }) => ns.listAudit({ ...(f.target ? { target: f.target } : {}), limit: intFlag('limit', f.limit)! }),
      columns: [
        ['at', (a) => a.at],
        ['actor', (a) => a.actor],
        ['action', (a) => a.action],
        ['target', (a) => a.target],
        ['reason', (a) => a.reason],
      ],
      empty: ({ flags: f }) => (f.target ? `no manual actions on ${f.target}` : 'no manual actions yet'),
    },
  );
}
