import type { Command } from 'commander';
import type { ScheduleInfo, ScheduleTickRecord, TriggerResult } from '../../index.js';
import type { CliRun } from '../cli-io.js';
import { clientCommand, listCommand } from '../client-command.js';
import { age } from '../output.js';
import { intFlag, jsonFlag } from '../parse.js';

/** `nightshift schedules list|trigger|pause|resume|ticks`. */
export function registerSchedules(program: Command, run: CliRun): void {
  const schedules = program.command('schedules').description('list, trigger, pause and resume schedules');

  listCommand<{ next: string }, [], ScheduleInfo[]>(schedules.command('list').description('schedules with their next runs and last outcome').option('--next <n>', 'how many next run times to show', '3'), run, {
    fetch: (ns, { flags: f }) => ns.listSchedules({ next: intFlag('next', f.next)! }),
    columns: [
      ['schedule', (s) => s.name],
      ['timing', (s) => (s.paused ? `${s.spec ?? ''} (paused)` : (s.spec ?? (s.cron ? `cron ${s.cron} ${s.tz}` : `every ${s.every}`)))],
      ['job', (s) => s.kind],
      ['next runs', (s) => s.nextRuns.map((d) => d.toISOString().replace('.000Z', 'Z')).join(', ')],
      ['last tick', (s, now) => (s.lastTick ? `${age(now - s.lastTick.at.getTime())} ago` : 'never')],
      ['outcome', (s) => s.lastTick?.outcome ?? ''],
      ['job state', (s) => s.lastTick?.jobState ?? ''],
    ],
    empty: 'no schedules: none in the config or the database',
  });

  clientCommand<{ payload?: string; reason?: string }, [string], TriggerResult>(
    schedules
      .command('trigger <name>')
      .description("run a schedule's job now (a manual tick), with an optional payload")
      .option('--payload <json>', 'payload instead of the one the schedule builds')
      .option('--reason <text>', 'why (kept in the audit log)'),
    run,
    {
      check: (f) => void jsonFlag('payload', f.payload),
      fetch: (ns, { flags: f, args: [name] }) => ns.triggerSchedule(name, jsonFlag('payload', f.payload), f.reason ? { reason: f.reason } : {}),
      human: (r, { args: [name] }) => [`schedule ${name} triggered: job ${r.jobId}`],
    },
  );

  for (const action of ['pause', 'resume'] as const) {
    clientCommand<{ reason?: string }, [string], boolean>(
      schedules
        .command(`${action} <name>`)
        .description(action === 'pause' ? 'stop the schedule from firing on every process' : 'let the schedule fire again, from now')
        .option('--reason <text>', 'why (kept in the audit log)'),
      run,
      {
        json: false,
        fetch: (ns, { flags: f, args: [name] }) => {
          const o = f.reason ? { reason: f.reason } : {};
          return action === 'pause' ? ns.pauseSchedule(name, o) : ns.resumeSchedule(name, o);
        },
        human: (changed, { args: [name] }) => [changed ? `schedule ${name} ${action}d` : `schedule ${name} was already ${action === 'pause' ? 'paused' : 'running'}`],
      },
    );
  }

  listCommand<{ limit: string }, [string], ScheduleTickRecord[]>(
    schedules.command('ticks <name>').description("a schedule's ticks, newest first, with what became of each").option('--limit <n>', 'at most n ticks', '20'),
    run,
    {
      fetch: (ns, { flags: f, args: [name] }) => ns.scheduleTicks(name, { limit: intFlag('limit', f.limit)! }),
      columns: [
        ['tick', (t) => t.at],
        ['outcome', (t) => t.outcome],
        ['job', (t) => t.jobId],
        ['job state', (t) => t.jobState],
      ],
      empty: ({ args: [name] }) => `no ticks of ${name} yet`,
    },
  );
}
