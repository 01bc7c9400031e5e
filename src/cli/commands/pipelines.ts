import type { Command } from 'commander';
import type { PipelineRunState } from '../../db/pipelines-runs.js';
import type { VerifyResult } from '../../pipelines/artifact-publisher.js';
import type { CleanupResult, StartResult } from '../../pipelines/pipeline-admin.js';
import type { PipelineRun, PipelineRunDetail, RunSelector } from '../../pipelines/pipeline-queries.js';
import type { CliRun } from '../cli-io.js';
import { clientCommand, listCommand } from '../client-command.js';
import { EXIT, UsageError } from '../exit-codes.js';
import { age, table } from '../output.js';
import { intFlag, jsonFlag, listFlag } from '../parse.js';

interface ActionFlags {
  reason?: string;
  run?: string;
  dryRun?: boolean;
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
function showRun(d: PipelineRunDetail): string[] {
  const lines: string[] = [];
  const out = (line: string): void => void lines.push(line);
  const fields: [string, unknown][] = [
    ['run', `${d.id}${d.dryRun ? ' (dry run)' : ''}`],
    ['pipeline', d.pipeline],
    ['key', d.key],
    ['state', d.state],
    ['generation', d.generation],
    ['reason', d.reason],
    ['warnings', d.warnings || undefined],
    ['started by', d.startedBy],
    ['created', d.createdAt.toISOString()],
    ['finished', d.finishedAt?.toISOString()],
    ['deadline', d.deadlineAt ? `${d.deadlineAt.toISOString()}${d.deadlineMissedAt ? ' (missed)' : ''}` : undefined],
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
        s.items
          ? `${s.state} (${
              Object.entries(s.items.byState)
                .map(([st, n]) => `${n} ${st}`)
                .join(', ') || `0 of ${s.items.total}`
            })`
          : s.state,
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
    out(
      table(
        ['step', 'item', 'state', 'attempts', 'job', 'took', 'output', 'note'],
        items.map((i) => [i.step, i.key, i.state, i.attempts, i.jobId ?? '', ms(i.startedAt, i.finishedAt), i.outputBytes === null ? '' : `${i.outputBytes} B`, String(i.error?.message ?? '').slice(0, 60)]),
      ),
    );
  }
  if (d.artifacts.length) {
    out('');
    out(
      table(
        ['artifact', 'step', 'size', 'sha256', 'attempt', 'location', 'verified'],
        d.artifacts.map((a) => [
          `${a.name}${a.current ? '' : ` (gen ${a.generation}, superseded)`}`,
          a.item ? `${a.step}[${a.item}]` : a.step,
          a.size,
          a.sha256,
          `job ${a.jobId} #${a.attempt}`,
          a.location,
          a.verifiedAt?.toISOString() ?? '',
        ]),
      ),
    );
  }
  if (d.followUps.length) {
    out('');
    out(
      table(
        ['follow-up', 'generation', 'job', 'error'],
        d.followUps.map((f) => [f.name, f.generation, f.jobId ?? '', f.error ?? '']),
      ),
    );
  }
  if (d.history.length) {
    out('');
    out(
      table(
        ['generation', 'step', 'item', 'state', 'attempts', 'job', 'output'],
        d.history.map((h) => [h.generation, h.step, h.item, h.state, h.attempts, h.jobId ?? '', h.outputBytes === null ? '' : `${h.outputBytes} B`]),
      ),
    );
  }
  return lines;
}

/** `nightshift pipelines list|show|start|rerun|restart|cancel|verify|cleanup`. */
export function registerPipelines(program: Command, run: CliRun): void {
  const pipelines = program.command('pipelines').description('keyed multi-step runs: list, show, start, rerun, restart, cancel, verify and clean up');
  // The options every action on one run of a key takes.
  const selecting = (c: Command): Command => c.option('--run <id>', 'this run of the key').option('--dry-run', 'the newest dry run of the key');
  const audited = (c: Command): Command => c.option('--reason <text>', 'why (kept in the audit log)');

  listCommand<{ name?: string; state?: string; key?: string; limit: string; before?: string }, [], PipelineRun[]>(
    pipelines
      .command('list')
      .description('runs, newest first')
      .option('--name <pipeline>', 'only runs of this pipeline')
      .option('--state <states>', 'comma-separated states (running, succeeded, failed, cancelled, held)')
      .option('--key <key>', 'only runs of this key')
      .option('--limit <n>', 'at most n runs', '50')
      .option('--before <id>', 'only runs with a smaller id (paging)'),
    run,
    {
      check: (f) => void intFlag('limit', f.limit),
      fetch: (ns, { flags: f }) =>
        ns.pipelines.listRuns({
          ...(f.name ? { pipeline: f.name } : {}),
          ...(f.state ? { state: listFlag(f.state) as PipelineRunState[] } : {}),
          ...(f.key ? { key: f.key } : {}),
          ...(f.before ? { beforeId: f.before } : {}),
          limit: intFlag('limit', f.limit)!,
        }),
      columns: [
        ['id', (r) => r.id],
        ['pipeline', (r) => r.pipeline],
        ['key', (r) => r.key],
        ['dry', (r) => (r.dryRun ? 'dry' : '')],
        ['state', (r) => r.state],
        ['gen', (r) => r.generation],
        ['steps', (r) => `${r.steps.done}/${r.steps.total}`],
        ['warnings', (r) => r.warnings || ''],
        ['age', (r, now) => age(now - (r.finishedAt ?? r.createdAt).getTime())],
        ['reason', (r) => (r.reason ?? '').slice(0, 60)],
      ],
      empty: 'no pipeline runs',
    },
  );

  clientCommand<ActionFlags, [string, string], PipelineRunDetail>(
    selecting(pipelines.command('show <name> <key>').description('a run (the live one, else the newest dry run): steps with state, attempts, timings and output size; items; artifacts; history')),
    run,
    {
      fetch: (ns, { flags: f, args: [name, key] }) => ns.pipelines.getRun(name, key, selector(f)),
      human: showRun,
    },
  );

  clientCommand<ActionFlags & { input?: string }, [string, string], StartResult>(
    audited(
      pipelines
        .command('start <name> <key>')
        .description('start a run for the key (or print the run that has it)')
        .option('--input <json>', "the run's input, as JSON")
        .option('--dry-run', 'a dry run: effect steps skipped, no follow-ups, artifacts apart'),
    ),
    run,
    {
      check: (f) => void jsonFlag('input', f.input),
      fetch: (ns, { flags: f, args: [name, key] }) => ns.pipelines.start(name, key, jsonFlag('input', f.input), { ...who(f), ...(f.dryRun ? { dryRun: true } : {}) }),
      human: (r, { args: [name, key] }) => [`${r.created ? 'started' : 'exists:'} run ${r.run.id} of ${name} for ${key}${r.run.dryRun ? ' (dry run)' : ''}: ${r.run.state}`],
    },
  );

  clientCommand<ActionFlags, [string, string], PipelineRun>(
    audited(selecting(pipelines.command('rerun <name> <key>').description('resume a failed, cancelled or held run: failed steps (and items) run again, succeeded ones keep their outputs'))),
    run,
    {
      fetch: (ns, { flags: f, args: [name, key] }) => ns.pipelines.rerun(name, key, { ...selector(f), ...who(f) }),
      human: (r, { args: [name, key] }) => [`run ${r.id} of ${name} for ${key}: ${r.state}`],
    },
  );

  clientCommand<ActionFlags & { from: string }, [string, string], PipelineRun>(
    audited(
      selecting(
        pipelines
          .command('restart <name> <key>')
          .description('run a step and every step after it again, as a new generation (the old one is kept as history)')
          .requiredOption('--from <step>', 'the first step to run again'),
      ),
    ),
    run,
    {
      fetch: (ns, { flags: f, args: [name, key] }) => ns.pipelines.restart(name, key, { from: f.from, ...selector(f), ...who(f) }),
      human: (r, { args: [name, key] }) => [`run ${r.id} of ${name} for ${key}: ${r.state}, generation ${r.generation}`],
    },
  );

  clientCommand<ActionFlags, [string, string], PipelineRun>(
    audited(selecting(pipelines.command('cancel <name> <key>').description('cancel a running or held run: running steps are aborted, nothing new starts'))),
    run,
    {
      fetch: (ns, { flags: f, args: [name, key] }) => ns.pipelines.cancel(name, key, { ...selector(f), ...who(f) }),
      human: (r, { args: [name, key] }) => [`run ${r.id} of ${name} for ${key}: ${r.state}`],
    },
  );

  clientCommand<ActionFlags, [string, string], VerifyResult>(
    selecting(pipelines.command('verify <name> <key>').description('re-read every artifact of the run and compare it with its recorded SHA-256; exit 1 if any differs')),
    run,
    {
      fetch: (ns, { flags: f, args: [name, key] }) => ns.pipelines.verify(name, key, selector(f)),
      human: (r) => {
        const bad = r.artifacts.filter((a) => a.status !== 'ok');
        return [
          table(
            ['artifact', 'status', 'size', 'sha256', 'location'],
            r.artifacts.map((a) => [a.name, a.status, a.actualSize ?? '', a.status === 'changed' ? `${a.actualSha256} (recorded ${a.expectedSha256})` : a.expectedSha256, a.location]),
          ),
          bad.length === 0
            ? `all ${r.artifacts.length} artifact(s) of run ${r.runId} match their checksums`
            : `${bad.length} of ${r.artifacts.length} artifact(s) differ: ${bad.map((a) => `${a.name} (${a.status})`).join(', ')}`,
        ];
      },
      // A differing artifact fails the command, with --json too (a script checks the code).
      exitCode: (r) => (r.ok ? EXIT.ok : EXIT.failed),
    },
  );

  clientCommand<Omit<ActionFlags, 'dryRun'>, [string, string], CleanupResult>(
    audited(
      pipelines
        .command('cleanup <name> <key>')
        .description("remove the key's finished dry runs (steps, outputs, artifacts) and call the pipeline's cleanup hook; refuses a live run")
        .option('--run <id>', 'only this dry run'),
    ),
    run,
    {
      check: (f) => {
        if (f.run !== undefined && !/^[1-9][0-9]*$/.test(f.run)) throw new UsageError(`--run must be a run id, got "${f.run}"`);
      },
      fetch: (ns, { flags: f, args: [name, key] }) => ns.pipelines.cleanup(name, key, { ...who(f), ...(f.run ? { runId: f.run } : {}) }),
      human: (r, { args: [name, key] }) => [`removed ${r.removed.length} dry run(s) of ${name} for ${key}${r.removed.length ? `: ${r.removed.join(', ')}` : ''}`],
    },
  );
}
