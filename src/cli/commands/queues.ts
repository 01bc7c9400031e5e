import type { Command } from 'commander';
import type { CliRun } from '../cli-io.js';
import { clientCommand, listCommand } from '../client-command.js';
import { ago } from '../output.js';

/** `nightshift queues list|pause|resume`. */
export function registerQueues(program: Command, run: CliRun): void {
  const queues = program.command('queues').description('list, pause and resume queues');
  listCommand(queues.command('list').description('queues with their counts'), run, {
    fetch: (ns) => ns.listQueues(),
    columns: [
      ['queue', (q) => q.name],
      ['paused', (q) => (q.paused ? 'yes' : '')],
      ['available', (q) => q.available],
      ['scheduled', (q) => q.scheduled],
      ['running', (q) => q.running],
      ['held', (q) => q.held],
      ['failed', (q) => q.failed],
      ['oldest waiting', (q, now) => ago(q.oldestAvailable, now)],
    ],
    empty: 'no queues: a queue is listed once it has jobs or has been paused',
  });
  for (const action of ['pause', 'resume'] as const) {
    clientCommand<{ reason?: string }, [string], void>(
      queues
        .command(`${action} <queue>`)
        .description(action === 'pause' ? 'stop every process from claiming jobs of the queue' : 'let processes claim jobs of the queue again')
        .option('--reason <text>', 'why (kept in the audit log)'),
      run,
      {
        json: false,
        fetch: (ns, { flags: f, args: [queue] }) => (action === 'pause' ? ns.pauseQueue(queue, f.reason ? { reason: f.reason } : {}) : ns.resumeQueue(queue, f.reason ? { reason: f.reason } : {})),
        human: (_r, { args: [queue] }) => [`queue ${queue} ${action === 'pause' ? 'paused' : 'resumed'}`],
      },
    );
  }
}
