import type { Command } from 'commander';
import type { GroupDiagnosis, StreamDiagnosis } from '../../index.js';
import type { CliRun } from '../cli-io.js';
import { listCommand } from '../client-command.js';
import { age } from '../output.js';

/** A row of the table: a stream with one of its groups (or none defined). */
type StreamGroup = { s: StreamDiagnosis; g: GroupDiagnosis | undefined };

/**
 * `nightshift streams`: per stream its length, groups, consumers, pending entries and the oldest's
 * age, lag and dead letters, with a status in the words of seed 004's symptom table ("consumer
 * never started" when a group does not exist).
 */
export function registerStreams(program: Command, run: CliRun): void {
  listCommand(program.command('streams').description('diagnose Redis streams: length, groups, consumers, pending, lag, dead letters'), run, {
    fetch: (ns) => ns.diagnoseStreams(),
    rows: (d): StreamGroup[] => d.streams.flatMap((s) => (s.groups.length ? s.groups : [undefined]).map((g) => ({ s, g }))),
    columns: [
      ['stream', ({ s }) => s.stream],
      ['length', ({ s }) => (s.exists ? s.length : 'missing')],
      ['dead', ({ s }) => s.deadLetterCount],
      ['group', ({ g }) => g?.group ?? ''],
      ['consumers', ({ g }) => (g ? `${g.consumers.length}` : '')],
      ['pending', ({ g }) => g?.pending ?? ''],
      ['oldest pending', ({ g }) => (g?.oldestPendingAgeMs !== null && g?.oldestPendingAgeMs !== undefined ? age(g.oldestPendingAgeMs) : '')],
      ['lag', ({ g }) => g?.lag ?? ''],
      ['abandoned', ({ g }) => (g?.delivery === 'at-most-once' ? g.abandoned : '')],
      // Every status that applies (a silent reader must not hide abandoned or stuck entries).
      ['status', ({ g }) => (g ? `[${g.statuses.join(', ')}] ${g.statusText}` : 'no consumer group defined')],
    ],
    empty: 'no streams: the config defines none',
    footer: (d) => [`redis ${d.redisVersion}`],
  });
}
