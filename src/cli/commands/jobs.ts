import type { Command } from 'commander';
import type { BulkOptions, JobLimitState, JobLogLine, JobRecord, JobState, Resolution } from '../../index.js';
import type { CliRun } from '../cli-io.js';
import { clientCommand, listCommand } from '../client-command.js';
import { UsageError } from '../exit-codes.js';
import { age } from '../output.js';
import { intFlag, listFlag } from '../parse.js';
import { jobLimitLines } from './limits.js';

interface FilterFlags {
  kind?: string;
  queue?: string;
  state?: string;
}

/** When, for a listing: in how long for a job due later, else how long ago it last moved. */
function jobWhen(j: JobRecord, now: number): string {
  return j.state === 'available' && j.runAt.getTime() > now ? `in ${age(j.runAt.getTime() - now)}` : age(now - (j.finishedAt ?? j.startedAt ?? j.createdAt).getTime());
}

/** The note of a listing: the job's reason, else the last error — unless it completed, when an earlier attempt's error is history, not news. */
export function jobNote(j: Pick<JobRecord, 'state' | 'reason' | 'errors'>): string {
  if (j.reason) return j.reason;
  return j.state === 'completed' ? '' : (j.errors.at(-1)?.message ?? '');
}

/** One job in full: fields, then its limits (waiting for one is not stuck), its error history, then its log. */
function jobLines(j: JobRecord, logs: JobLogLine[], limits: JobLimitState[]): string[] {
  const rows: [string, unknown][] = [
    ['id', j.id],
    ['kind', j.kind],
    ['queue', j.queue],
    ['state', j.state],
    ['priority', j.priority],
    ['attempt', `${j.attempt} of ${j.maxAttempts}`],
    ['delivery', j.delivery],
    ['run at', j.runAt.toISOString()],
    ['created', j.createdAt.toISOString()],
    ['started', j.startedAt?.toISOString()],
    ['finished', j.finishedAt?.toISOString()],
    ['expires', j.expiresAt?.toISOString()],
    ['dedupe key', j.dedupeKey],
    ['lease', j.leaseOwner ? `${j.leaseOwner} token ${j.leaseToken} until ${j.leaseExpiresAt?.toISOString()}` : j.leaseToken ? `last token ${j.leaseToken}` : undefined],
    ['reason', j.reason],
  ];
  const lines = rows.filter(([, v]) => v !== undefined && v !== null).map(([k, v]) => `${k.padEnd(11)} ${String(v)}`);
  lines.push(...jobLimitLines(limits));
  if (j.errors.length) lines.push('errors:', ...j.errors.map((e) => `  attempt ${e.attempt} ${e.at} [${e.kind}${e.code ? ` ${e.code}` : ''}] ${e.message}`));
  if (logs.length) lines.push('log:', ...logs.map((l) => `  attempt ${l.attempt} ${l.at.toISOString()} ${l.level.padEnd(5)} ${l.msg}${l.fields ? ` ${JSON.stringify(l.fields)}` : ''}`));
  return lines;
}

function bulkFilter(f: FilterFlags, ids: string[]): Omit<BulkOptions, 'dryRun'> {
  return {
    ...(f.kind ? { kind: f.kind } : {}),
    ...(f.queue ? { queue: f.queue } : {}),
    ...(f.state ? { state: listFlag(f.state) as JobState[] } : {}),
    ...(ids.length ? { ids } : {}),
  };
}

/** What `jobs retry|cancel` did: the jobs named by id, a dry run's count, or a bulk action's. */
type BulkResult = { by: 'ids'; jobs: JobRecord[] } | { by: 'dry-run'; matched: number } | { by: 'filter'; changed: number };

/** `nightshift jobs list|show|retry|cancel|run-now|resolve`. */
export function registerJobs(program: Command, run: CliRun): void {
  const jobs = program.command('jobs').description('list, inspect, retry, cancel and resolve jobs');

  listCommand<FilterFlags & { limit: string; before?: string }, [], JobRecord[]>(
    jobs
      .command('list')
      .description('jobs, newest first')
      .option('--kind <kind>')
      .option('--queue <queue>')
      .option('--state <states>', 'comma-separated states (available, running, completed, discarded, cancelled, expired, held, abandoned)')
      .option('--limit <n>', 'at most n jobs', '50')
      .option('--before <id>', 'only jobs with a smaller id (paging)'),
    run,
    {
      fetch: (ns, { flags: f }) => ns.listJobs({ ...bulkFilter(f, []), limit: intFlag('limit', f.limit)!, ...(f.before ? { beforeId: f.before } : {}) }),
      columns: [
        ['id', (j) => j.id],
        ['kind', (j) => j.kind],
        ['queue', (j) => j.queue],
        ['state', (j) => j.state],
        ['attempt', (j) => `${j.attempt}/${j.maxAttempts}`],
        ['when', jobWhen],
        ['note', (j) => jobNote(j).slice(0, 60)],
      ],
      empty: ({ flags: f }) => (f.kind || f.queue || f.state || f.before ? 'no jobs match' : 'no jobs'),
    },
  );

  clientCommand<object, [string], { job: JobRecord; logs: JobLogLine[]; limits: JobLimitState[] }>(jobs.command('show <id>').description('one job with its limits and error history'), run, {
    fetch: async (ns, { args: [id] }) => ({ job: await ns.getJob(id), logs: await ns.jobLogs(id), limits: await ns.jobLimits(id) }),
    toJson: ({ job, logs, limits }) => ({ ...job, logs, limits }),
    human: ({ job, logs, limits }) => jobLines(job, logs, limits),
  });

  const bulk = (name: 'retry' | 'cancel', description: string) =>
    clientCommand<FilterFlags & { reason?: string; dryRun?: boolean; yes?: boolean }, [string[]], BulkResult>(
      jobs
        .command(`${name} [ids...]`)
        .description(description)
        .option('--kind <kind>', 'every job of this kind (bulk)')
        .option('--queue <queue>', 'every job of this queue (bulk)')
        .option('--state <states>', name === 'retry' ? 'states to retry (default discarded)' : 'states to cancel (default available)')
        .option('--reason <text>', 'why (kept in the audit log)')
        .option('--dry-run', 'count what would change, change nothing')
        .option('--yes', 'confirm a bulk action'),
      run,
      {
        check: (f, [ids]) => {
          if (!(f.kind || f.queue || f.state) && ids.length === 0)
            throw new UsageError(`give job ids or a filter (--kind, --queue, --state)`, `e.g. nightshift jobs ${name} 42, or nightshift jobs ${name} --kind send-email --yes`);
        },
        fetch: async (ns, { flags: f, args: [ids] }): Promise<BulkResult> => {
          const reason = f.reason ? { reason: f.reason } : {};
          if (!(f.kind || f.queue || f.state)) {
            const changed: JobRecord[] = [];
            for (const id of ids) changed.push(await (name === 'retry' ? ns.retryJob(id, reason) : ns.cancelJob(id, reason)));
            return { by: 'ids', jobs: changed };
          }
          const filter = bulkFilter(f, ids);
          const count = name === 'retry' ? await ns.retryJobs({ ...filter, dryRun: true }) : await ns.cancelJobs({ ...filter, dryRun: true });
          if (f.dryRun) return { by: 'dry-run', matched: count };
          if (!f.yes) throw new UsageError(`this would ${name} ${count} job(s); add --yes to confirm (or --dry-run to only count)`);
          const options = { ...filter, ...reason, onProgress: (done: number) => run.note(`${name}: ${done}/${count}`) };
          return { by: 'filter', changed: name === 'retry' ? await ns.retryJobs(options) : await ns.cancelJobs(options) };
        },
        toJson: (r) => (r.by === 'ids' ? r.jobs : r.by === 'dry-run' ? { dryRun: true, matched: r.matched } : { changed: r.changed }),
        human: (r) =>
          r.by === 'ids' ? r.jobs.map((j) => `job ${j.id}: ${j.state}`) : r.by === 'dry-run' ? [`would ${name} ${r.matched} job(s)`] : [`${name === 'retry' ? 'retried' : 'cancelled'} ${r.changed} job(s)`],
      },
    );
  bulk('retry', 'run failed, cancelled, expired, held or abandoned jobs again now');
  bulk('cancel', 'cancel pending, held, abandoned or running jobs');

  clientCommand<{ reason?: string }, [string], JobRecord>(
    jobs.command('run-now <id>').description('run a pending job now: one due later (--run-at, --delay-ms, a back-off) or debounced').option('--reason <text>', 'why (kept in the audit log)'),
    run,
    {
      fetch: (ns, { flags: f, args: [id] }) => ns.runJobNow(id, { ...(f.reason !== undefined ? { reason: f.reason } : {}) }),
      human: (job) => [`job ${job.id}: ${job.state}, runs at ${job.runAt.toISOString()}`],
    },
  );

  clientCommand<{ as: string; reason?: string }, [string], JobRecord>(
    jobs
      .command('resolve <id>')
      .description('resolve a held or abandoned job')
      .requiredOption('--as <outcome>', 'completed, failed or retry')
      .option('--reason <text>', 'why (kept on the job and in the audit log)'),
    run,
    {
      check: (f) => {
        if (!['completed', 'failed', 'retry'].includes(f.as)) throw new UsageError(`--as must be completed, failed or retry, got "${f.as}"`);
      },
      fetch: (ns, { flags: f, args: [id] }) => ns.resolveJob(id, { as: f.as as Resolution, ...(f.reason ? { reason: f.reason } : {}) }),
      human: (job) => [`job ${job.id}: ${job.state}`],
    },
  );
}
