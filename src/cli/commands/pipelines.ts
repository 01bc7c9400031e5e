import type { Command } from 'commander';
import type { PipelineRunState } from '../../db/pipelines-runs.js';
import type { PipelineRun, PipelineRunDetail, RunSelector } from '../../pipelines/pipeline-queries.js';
import { cliContext, withClient, type GlobalOptions } from '../context.js';
import { EXIT, UsageError } from '../exit-codes.js';
import { age, json, out, table } from '../output.js';
import { intFlag, jsonFlag, listFlag } from '../parse.js';

interface ActionFlags {
  reason?: string;
  json?: boolean;
  run?: string;
  dryRun?: boolean;
}

function runLine(r: PipelineRun): (string | number | boolean | null)[] {
  const when = age(Date.now() - (r.finishedAt ?? r.createdAt).getTime());
  return [r.id, r.pipeline, r.key, r.dryRun ? 'dry' : '', r.state, r.generation, `${r.steps.done}/${r.steps.total}`, r.warnings || '', when, (r.reason ?? '').slice(0, 60)];
}

function selector(f: ActionFlags): RunSelector {
  return { ...(f.run !== undefined ? { runId: f.run } : {}), ...(f.dryRun ? { dryRun: true } : {}) };
}

function who(f: ActionFlags): { reason?: string } {
  return f.reason !== undefined ? { reason: f.reason } : {};
}

function ms(a: Date | null, b: Date | null): string {
  return a && b ? `${Math.max(0, b.getTime() - a.getTime())} ms` : '';
}

/** Prints a run in full: fields, the step graph, items, artifacts, follow-ups, history. */
function showRun(d: PipelineRunDetail): void {
  const fields: [string, unknown][] = [
    ['run', `${d.id}${d.dryRun ? ' (dry run)' : ''}`], ['pipeline', d.pipeline], ['key', d.key], ['state', d.state], ['generation', d.generation],
    ['reason', d.reason], ['warnings', d.warnings || undefined], ['started by', d.startedBy], ['created', d.createdAt.toISOString()],
    ['finished', d.finishedAt?.toISOString()], ['deadline', d.deadlineAt ? `${d.deadlineAt.toISOString()}${d.deadlineMissedAt ? ' (missed)' : ''}` : undefined],
    ['published', d.artifactsPublishedAt?.toISOString()],
  ];
  for (const [k, v] of fields) if (v !== undefined && v !== null) out(`${k.padEnd(11)} ${String(v)}`);
  out('');
  out(
    table(
      ['step', 'needs', 'kind', 'state', 'attempts', 'job', 'started', 'took', 'output', 'note'],
      d.stepList.map((s) => [
        s.name,
        s.needs.join(','),
        [s.map ? 'map' : '', s.optional ? (s.optional === 'skip' ? 'optional(skip)' : 'optional') : '', s.effect ? 'effect' : ''].filter(Boolean).join(' '),
        s.items ? `${s.state} (${Object.entries(s.items.byState).map(([st, n]) => `${n} ${st}`).join(', ') || `0 of ${s.items.total}`})` : s.state,
        s.attempts,
        s.jobId ? `${s.jobId}${s.jobState ? ` ${s.jobState}` : ''}` : '',
        s.startedAt?.toISOString() ?? '',
        ms(s.startedAt, s.finishedAt),
        s.outputBytes === null ? '' : `${s.outputBytes} B`,
        String(s.error?.message ?? '').slice(0, 60),
      ]),
    ),
  );
  const items = d.stepList.flatMap((s) => (s.items?.list ?? []).map((i) => ({ step: s.name, ...i })));
  if (items.length) {
    out('');
    out(table(['step', 'item', 'state', 'attempts', 'job', 'took', 'output', 'note'], items.map((i) => [i.step, i.key, i.state, i.attempts, i.jobId ?? '', ms(i.startedAt, i.finishedAt), i.outputBytes === null ? '' : `${i.outputBytes} B`, String(i.error?.message ?? '').slice(0, 60)])));
  }
  if (d.artifacts.length) {
    out('');
    out(table(['artifact', 'step', 'size', 'sha256', 'attempt', 'location', 'verified'], d.artifacts.map((a) => [`${a.name}${a.current ? '' : ` (gen ${a.generation}, superseded)`}`, a.item ? `${a.step}[${a.item}]` : a.step, a.size, a.sha256, `job ${a.jobId} #${a.attempt}`, a.location, a.verifiedAt?.toISOString() ?? ''])));
  }
  if (d.followUps.length) {
    out('');
    out(table(['follow-up', 'generation', 'job', 'error'], d.followUps.map((f) => [f.name, f.generation, f.jobId ?? '', f.error ?? ''])));
  }
  if (d.history.length) {
    out('');
    out(table(['generation', 'step', 'item', 'state', 'attempts', 'job', 'output'], d.history.map((h) => [h.generation, h.step, h.item, h.state, h.attempts, h.jobId ?? '', h.outputBytes === null ? '' : `${h.outputBytes} B`])));
  }
}

/** `nightshift pipelines list|show|start|rerun|restart|cancel|verify|cleanup`. */
export function registerPipelines(program: Command): void {
  const pipelines = program.command('pipelines').description('keyed multi-step runs: list, show, start, rerun, restart, cancel, verify and clean up');

  pipelines
    .command('list')
    .description('runs, newest first')
    .option('--name <pipeline>', 'only runs of this pipeline')
    .option('--state <states>', 'comma-separated states (running, succeeded, failed, cancelled, held)')
    .option('--key <key>', 'only runs of this key')
    .option('--limit <n>', 'at most n runs', '50')
    .option('--before <id>', 'only runs with a smaller id (paging)')
    .option('--json', 'print JSON')
    .action(async (f: { name?: string; state?: string; key?: string; limit: string; before?: string; json?: boolean }, cmd: Command) => {
      const ctx = await cliContext(cmd.optsWithGlobals<GlobalOptions>());
      const list = await withClient(ctx, (ns) =>
        ns.pipelines.listRuns({
          ...(f.name ? { pipeline: f.name } : {}),
          ...(f.state ? { state: listFlag(f.state) as PipelineRunState[] } : {}),
          ...(f.key ? { key: f.key } : {}),
          ...(f.before ? { beforeId: f.before } : {}),
          limit: intFlag('limit', f.limit)!,
        }),
      );
      if (f.json) return json(list);
      out(table(['id', 'pipeline', 'key', 'dry', 'state', 'gen', 'steps', 'warnings', 'age', 'reason'], list.map(runLine)));
    });

  pipelines
    .command('show <name> <key>')
    .description('a run (the live one, else the newest dry run): steps with state, attempts, timings and output size; items; artifacts; history')
    .option('--run <id>', 'this run of the key')
    .option('--dry-run', 'the newest dry run of the key')
    .option('--json', 'print JSON')
    .action(async (name: string, key: string, f: ActionFlags, cmd: Command) => {
      const ctx = await cliContext(cmd.optsWithGlobals<GlobalOptions>());
      const d = await withClient(ctx, (ns) => ns.pipelines.getRun(name, key, selector(f)));
      if (f.json) return json(d);
      showRun(d);
    });

  pipelines
    .command('start <name> <key>')
    .description('start a run for the key (or print the run that has it)')
    .option('--input <json>', "the run's input, as JSON")
    .option('--dry-run', 'a dry run: effect steps skipped, no follow-ups, artifacts apart')
    .option('--reason <text>', 'why (kept in the audit log)')
    .option('--json', 'print JSON')
    .action(async (name: string, key: string, f: ActionFlags & { input?: string }, cmd: Command) => {
      const input = jsonFlag('input', f.input);
      const ctx = await cliContext(cmd.optsWithGlobals<GlobalOptions>());
      const r = await withClient(ctx, (ns) => ns.pipelines.start(name, key, input, { ...who(f), ...(f.dryRun ? { dryRun: true } : {}) }));
      if (f.json) return json(r);
      out(`${r.created ? 'started' : 'exists:'} run ${r.run.id} of ${name} for ${key}${r.run.dryRun ? ' (dry run)' : ''}: ${r.run.state}`);
    });

  pipelines
    .command('rerun <name> <key>')
    .description('resume a failed, cancelled or held run: failed steps (and items) run again, succeeded ones keep their outputs')
    .option('--run <id>', 'this run of the key')
    .option('--dry-run', 'the newest dry run of the key')
    .option('--reason <text>', 'why (kept in the audit log)')
    .option('--json', 'print JSON')
    .action(async (name: string, key: string, f: ActionFlags, cmd: Command) => {
      const ctx = await cliContext(cmd.optsWithGlobals<GlobalOptions>());
      const r = await withClient(ctx, (ns) => ns.pipelines.rerun(name, key, { ...selector(f), ...who(f) }));
      if (f.json) return json(r);
      out(`run ${r.id} of ${name} for ${key}: ${r.state}`);
    });

  pipelines
    .command('restart <name> <key>')
    .description('run a step and every step after it again, as a new generation (the old one is kept as history)')
    .requiredOption('--from <step>', 'the first step to run again')
    .option('--run <id>', 'this run of the key')
    .option('--dry-run', 'the newest dry run of the key')
    .option('--reason <text>', 'why (kept in the audit log)')
    .option('--json', 'print JSON')
    .action(async (name: string, key: string, f: ActionFlags & { from: string }, cmd: Command) => {
      const ctx = await cliContext(cmd.optsWithGlobals<GlobalOptions>());
      const r = await withClient(ctx, (ns) => ns.pipelines.restart(name, key, { from: f.from, ...selector(f), ...who(f) }));
      if (f.json) return json(r);
      out(`run ${r.id} of ${name} for ${key}: ${r.state}, generation ${r.generation}`);
    });

  pipelines
    .command('cancel <name> <key>')
    .description('cancel a running or held run: running steps are aborted, nothing new starts')
    .option('--run <id>', 'this run of the key')
    .option('--dry-run', 'the newest dry run of the key')
    .option('--reason <text>', 'why (kept in the audit log)')
    .option('--json', 'print JSON')
    .action(async (name: string, key: string, f: ActionFlags, cmd: Command) => {
      const ctx = await cliContext(cmd.optsWithGlobals<GlobalOptions>());
      const r = await withClient(ctx, (ns) => ns.pipelines.cancel(name, key, { ...selector(f), ...who(f) }));
      if (f.json) return json(r);
      out(`run ${r.id} of ${name} for ${key}: ${r.state}`);
    });

  pipelines
    .command('verify <name> <key>')
    .description("re-read every artifact of the run and compare it with its recorded SHA-256; exit 1 if any differs")
    .option('--run <id>', 'this run of the key')
    .option('--dry-run', 'the newest dry run of the key')
    .option('--json', 'print JSON')
    .action(async (name: string, key: string, f: ActionFlags, cmd: Command) => {
      const ctx = await cliContext(cmd.optsWithGlobals<GlobalOptions>());
      const r = await withClient(ctx, (ns) => ns.pipelines.verify(name, key, selector(f)));
      if (f.json) json(r);
      else {
        out(table(['artifact', 'status', 'size', 'sha256', 'location'], r.artifacts.map((a) => [a.name, a.status, a.actualSize ?? '', a.status === 'changed' ? `${a.actualSha256} (recorded ${a.expectedSha256})` : a.expectedSha256, a.location])));
        const bad = r.artifacts.filter((a) => a.status !== 'ok');
        out(bad.length === 0 ? `all ${r.artifacts.length} artifact(s) of run ${r.runId} match their checksums` : `${bad.length} of ${r.artifacts.length} artifact(s) differ: ${bad.map((a) => `${a.name} (${a.status})`).join(', ')}`);
      }
      if (!r.ok) process.exitCode = EXIT.failed;
    });

  pipelines
    .command('cleanup <name> <key>')
    .description("remove the key's finished dry runs (steps, outputs, artifacts) and call the pipeline's cleanup hook; refuses a live run")
    .option('--run <id>', 'only this dry run')
    .option('--reason <text>', 'why (kept in the audit log)')
    .option('--json', 'print JSON')
    .action(async (name: string, key: string, f: ActionFlags, cmd: Command) => {
      if (f.run !== undefined && !/^[1-9][0-9]*$/.test(f.run)) throw new UsageError(`--run must be a run id, got "${f.run}"`);
      const ctx = await cliContext(cmd.optsWithGlobals<GlobalOptions>());
      const r = await withClient(ctx, (ns) => ns.pipelines.cleanup(name, key, { ...who(f), ...(f.run ? { runId: f.run } : {}) }));
      if (f.json) return json(r);
      out(`removed ${r.removed.length} dry run(s) of ${name} for ${key}${r.removed.length ? `: ${r.removed.join(', ')}` : ''}`);
    });
}
