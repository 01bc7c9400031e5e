import type { Command } from 'commander';
import { cliContext, withClient, type GlobalOptions } from '../context.js';
import { intFlag, jsonFlag } from '../parse.js';
import { age, json, out, table } from '../output.js';

/** `nightshift schedules list|trigger|pause|resume|ticks`. */
export function registerSchedules(program: Command): void {
  const schedules = program.command('schedules').description('list, trigger, pause and resume schedules');

  schedules
    .command('list')
    .description('schedules with their next runs and last outcome')
    .option('--next <n>', 'how many next run times to show', '3')
    .option('--json', 'print JSON')
    .action(async (f: { next: string; json?: boolean }, cmd: Command) => {
      const ctx = await cliContext(cmd.optsWithGlobals<GlobalOptions>());
      const list = await withClient(ctx, (ns) => ns.listSchedules({ next: intFlag('next', f.next)! }));
      if (f.json) return json(list);
      out(
        table(
          ['schedule', 'timing', 'job', 'next runs', 'last tick', 'outcome', 'job state'],
          list.map((s) => [
            s.name,
            s.paused ? `${s.spec ?? ''} (paused)` : (s.spec ?? (s.cron ? `cron ${s.cron} ${s.tz}` : `every ${s.every}`)),
            s.kind,
            s.nextRuns.map((d) => d.toISOString().replace('.000Z', 'Z')).join(', '),
            s.lastTick ? `${age(Date.now() - s.lastTick.at.getTime())} ago` : 'never',
            s.lastTick?.outcome ?? '',
            s.lastTick?.jobState ?? '',
          ]),
        ),
      );
    });

  schedules
    .command('trigger <name>')
    .description("run a schedule's job now (a manual tick), with an optional payload")
    .option('--payload <json>', 'payload instead of the one the schedule builds')
    .option('--reason <text>', 'why (kept in the audit log)')
    .option('--json', 'print JSON')
    .action(async (name: string, f: { payload?: string; reason?: string; json?: boolean }, cmd: Command) => {
      const payload = jsonFlag('payload', f.payload);
      const ctx = await cliContext(cmd.optsWithGlobals<GlobalOptions>());
      const result = await withClient(ctx, (ns) => ns.triggerSchedule(name, payload, f.reason ? { reason: f.reason } : {}));
      if (f.json) json(result);
      else out(`schedule ${name} triggered: job ${result.jobId}`);
    });

  for (const action of ['pause', 'resume'] as const) {
    schedules
      .command(`${action} <name>`)
      .description(action === 'pause' ? 'stop the schedule from firing on every process' : 'let the schedule fire again, from now')
      .option('--reason <text>', 'why (kept in the audit log)')
      .action(async (name: string, f: { reason?: string }, cmd: Command) => {
        const ctx = await cliContext(cmd.optsWithGlobals<GlobalOptions>());
        const o = f.reason ? { reason: f.reason } : {};
        const changed = await withClient(ctx, (ns) => (action === 'pause' ? ns.pauseSchedule(name, o) : ns.resumeSchedule(name, o)));
        out(changed ? `schedule ${name} ${action}d` : `schedule ${name} was already ${action === 'pause' ? 'paused' : 'running'}`);
      });
  }

  schedules
    .command('ticks <name>')
    .description("a schedule's ticks, newest first, with what became of each")
    .option('--limit <n>', 'at most n ticks', '20')
    .option('--json', 'print JSON')
    .action(async (name: string, f: { limit: string; json?: boolean }, cmd: Command) => {
      const ctx = await cliContext(cmd.optsWithGlobals<GlobalOptions>());
      const ticks = await withClient(ctx, (ns) => ns.scheduleTicks(name, { limit: intFlag('limit', f.limit)! }));
      if (f.json) return json(ticks);
      out(table(['tick', 'outcome', 'job', 'job state'], ticks.map((t) => [t.at, t.outcome, t.jobId, t.jobState])));
    });
}
