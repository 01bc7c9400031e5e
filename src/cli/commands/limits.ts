import type { Command } from 'commander';
import type { JobLimitState, LimitRecord } from '../../index.js';
import type { CliRun } from '../cli-io.js';
import { listCommand } from '../client-command.js';

/** A limit's bound in words: `4 running` or `60 per 60000 ms`, per key when it has keys. */
function bound(l: Pick<LimitRecord, 'type' | 'max' | 'perMs'> & { keyed?: boolean }): string {
  const b = l.type === 'rate' ? `${l.max} per ${l.perMs} ms` : `${l.max} running`;
  return l.keyed ? `${b} per key` : b;
}

/** The lines of `jobs show` for the limits a job holds or waits for (docs/flow-control.md). */
export function jobLimitLines(limits: readonly JobLimitState[]): string[] {
  if (limits.length === 0) return [];
  return [
    'limits:',
    ...limits.map(
      (l) => `  ${l.limit}${l.key ? ` key ${l.key}` : ''}: ${l.inUse}/${l.max}${l.type === 'rate' ? ` starts in ${l.perMs} ms` : ' running'}${l.full ? ' — full: a due job of it waits for this limit' : ''}`,
    ),
  ];
}

/** `nightshift limits`: every fleet-wide limit with its use now. */
export function registerLimits(program: Command, run: CliRun): void {
  listCommand(program.command('limits').description('fleet-wide concurrency and rate limits: slots in use, keys at their limit, due jobs waiting'), run, {
    fetch: (ns) => ns.listLimits(),
    columns: [
      ['limit', (l) => l.name],
      ['bound', (l) => bound(l)],
      ['in use', (l) => l.inUse],
      ['full keys', (l) => (l.keyed || l.fullKeys > 0 ? l.fullKeys : '')],
      ['waiting', (l) => l.waiting],
      [
        'busiest',
        (l) =>
          l.top
            .slice(0, 3)
            .map((t) => `${t.key || '(all)'}=${t.inUse}`)
            .join(' '),
      ],
    ],
    empty: 'no limits: none is declared by a worker that ran on this schema (docs/flow-control.md)',
  });
}
