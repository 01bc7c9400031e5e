import type { Command } from 'commander';
import { cliContext, withClient, type GlobalOptions } from '../context.js';
import { intFlag } from '../parse.js';
import { age, json, out, table } from '../output.js';
import { EXIT, UsageError } from '../exit-codes.js';

/** The names in a registry field (older processes may lack it). */
function names(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

/** `nightshift workers`, `stats`, `budget` and `audit`: read-only views. */
export function registerStatus(program: Command): void {
  program
    .command('workers')
    .description('live processes: host, pid, roles, version, last seen, and what each runs now (jobs, queues, daemons it leads, stream consumers)')
    .option('--json', 'print JSON')
    .action(async (f: { json?: boolean }, cmd: Command) => {
      const ctx = await cliContext(cmd.optsWithGlobals<GlobalOptions>());
      const list = await withClient(ctx, (ns) => ns.listProcesses());
      if (f.json) return json(list);
      out(
        table(
          ['id', 'host', 'pid', 'roles', 'version', 'started', 'last seen', 'running', 'queues', 'leads', 'consumers'],
          list.map((p) => {
            const info = p.info;
            const running = typeof info.running === 'number' ? `${info.running}/${String(info.concurrency ?? '?')}` : '';
            // A consumer hosted but not running here is a singleton led elsewhere: shown in brackets.
            const active = new Set(names(info.activeConsumers));
            const consumers = names(info.consumers).map((c) => (active.has(c) || info.activeConsumers === undefined ? c : `(${c})`));
            return [p.id, p.host, p.pid, p.roles.join(','), p.version, age(Date.now() - p.startedAt.getTime()), `${age(p.secondsSinceSeen * 1000)} ago`, running, names(info.queues).join(','), names(info.leading).join(','), consumers.join(',')];
          }),
        ),
      );
    });

  program
    .command('stats')
    .description('job counts per queue, kind and state')
    .option('--json', 'print JSON')
    .action(async (f: { json?: boolean }, cmd: Command) => {
      const ctx = await cliContext(cmd.optsWithGlobals<GlobalOptions>());
      const stats = await withClient(ctx, (ns) => ns.stats());
      if (f.json) return json(stats);
      out(table(['queue', 'kind', 'state', 'count', 'oldest waiting'], stats.map((s) => [s.queue, s.kind, s.state, s.count, s.oldestAvailable ? age(Date.now() - s.oldestAvailable.getTime()) : ''])));
    });

  program
    .command('budget')
    .description("connections one process and the fleet need, against the server's max_connections")
    .option('--replicas <n>', 'processes in the fleet', '1')
    .option('--json', 'print JSON')
    .action(async (f: { replicas: string; json?: boolean }, cmd: Command) => {
      const replicas = intFlag('replicas', f.replicas)!;
      if (replicas < 1) throw new UsageError('--replicas must be at least 1');
      const ctx = await cliContext(cmd.optsWithGlobals<GlobalOptions>());
      // The budget of a worker process as the config defines it (not of this short-lived CLI client).
      const worker = ctx.client({ worker: true });
      const report = await worker.connectionBudget({ replicas }).finally(() => worker.stop());
      if (f.json) return json(report);
      out(`per process: ${report.perProcess.total} (shared pool ${report.perProcess.pool} + listener ${report.perProcess.listener})`);
      out(`fleet of ${replicas}: ${report.fleet}`);
      out(`server: max_connections ${report.server.maxConnections} − ${report.server.reserved} reserved = ${report.server.available} (in use now: ${report.server.inUse})`);
      out(report.ok ? `ok: ${report.headroom} connections to spare` : `OVER BUDGET by ${-report.headroom}: lower maxConnections or replicas, or raise max_connections`);
      // The same code as a worker refusing to start over budget (NS_BUDGET_EXCEEDED): a configuration error.
      if (!report.ok) process.exitCode = EXIT.usage;
    });

  program
    .command('audit')
    .description('manual actions: who, what, why, when')
    .option('--target <target>', 'e.g. job:42 or queue:mail')
    .option('--limit <n>', 'at most n entries', '50')
    .option('--json', 'print JSON')
    .action(async (f: { target?: string; limit: string; json?: boolean }, cmd: Command) => {
      const ctx = await cliContext(cmd.optsWithGlobals<GlobalOptions>());
      const list = await withClient(ctx, (ns) => ns.listAudit({ ...(f.target ? { target: f.target } : {}), limit: intFlag('limit', f.limit)! }));
      if (f.json) return json(list);
      out(table(['at', 'actor', 'action', 'target', 'reason'], list.map((a) => [a.at, a.actor, a.action, a.target, a.reason])));
    });
}
