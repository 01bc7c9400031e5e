import type { Command } from 'commander';
import { cliContext, withClient, type GlobalOptions } from '../context.js';
import { age, json, out, table } from '../output.js';

/** `nightshift queues list|pause|resume`. */
export function registerQueues(program: Command): void {
  const queues = program.command('queues').description('list, pause and resume queues');
  queues
    .command('list')
    .description('queues with their counts')
    .option('--json', 'print JSON')
    .action(async (f: { json?: boolean }, cmd: Command) => {
      const ctx = await cliContext(cmd.optsWithGlobals<GlobalOptions>());
      const list = await withClient(ctx, (ns) => ns.listQueues());
      if (f.json) return json(list);
      out(
        table(
          ['queue', 'paused', 'available', 'scheduled', 'running', 'held', 'failed', 'oldest waiting'],
          list.map((q) => [q.name, q.paused ? 'yes' : '', q.available, q.scheduled, q.running, q.held, q.failed, q.oldestAvailable ? age(Date.now() - q.oldestAvailable.getTime()) : '']),
        ),
      );
    });
  for (const action of ['pause', 'resume'] as const) {
    queues
      .command(`${action} <queue>`)
      .description(action === 'pause' ? 'stop every process from claiming jobs of the queue' : 'let processes claim jobs of the queue again')
      .option('--reason <text>', 'why (kept in the audit log)')
      .action(async (queue: string, f: { reason?: string }, cmd: Command) => {
        const ctx = await cliContext(cmd.optsWithGlobals<GlobalOptions>());
        await withClient(ctx, (ns) => (action === 'pause' ? ns.pauseQueue(queue, f.reason ? { reason: f.reason } : {}) : ns.resumeQueue(queue, f.reason ? { reason: f.reason } : {})));
        out(`queue ${queue} ${action === 'pause' ? 'paused' : 'resumed'}`);
      });
  }
}
