import type { Command } from 'commander';
import { cliContext, withClient, type GlobalOptions } from '../context.js';
import { age, json, out, table } from '../output.js';

/**
 * `nightshift streams`: per stream its length, groups, consumers, pending entries and the oldest's
 * age, lag and dead letters, with a status in the words of seed 004's symptom table ("consumer
 * never started" when a group does not exist).
 */
export function registerStreams(program: Command): void {
  program
    .command('streams')
    .description('diagnose Redis streams: length, groups, consumers, pending, lag, dead letters')
    .option('--json', 'print JSON')
    .action(async (f: { json?: boolean }, cmd: Command) => {
      const ctx = await cliContext(cmd.optsWithGlobals<GlobalOptions>());
      const d = await withClient(ctx, (ns) => ns.diagnoseStreams());
      if (f.json) return json(d);
      const rows = d.streams.flatMap((s) =>
        (s.groups.length ? s.groups : [undefined]).map((g) => [
          s.stream,
          s.exists ? s.length : 'missing',
          s.deadLetterCount,
          g?.group ?? '',
          g ? `${g.consumers.length}` : '',
          g?.pending ?? '',
          g?.oldestPendingAgeMs !== null && g?.oldestPendingAgeMs !== undefined ? age(g.oldestPendingAgeMs) : '',
          g?.lag ?? '',
          g?.statusText ?? 'no consumer group defined',
        ]),
      );
      out(table(['stream', 'length', 'dead', 'group', 'consumers', 'pending', 'oldest pending', 'lag', 'status'], rows));
      out(`redis ${d.redisVersion}`);
    });
}
