import type { Command } from 'commander';
import type { JobRecord, JobState } from '../../db/job-row.js';
import type { BulkOptions, Resolution } from '../../jobs/job-admin.js';
import { cliContext, withClient, type GlobalOptions } from '../context.js';
import { UsageError } from '../exit-codes.js';
import { intFlag, listFlag } from '../parse.js';
import { age, json, note, out, table } from '../output.js';

interface FilterFlags {
  kind?: string;
  queue?: string;
  state?: string;
}

function jobLine(j: JobRecord): (string | number | null)[] {
  const when = j.state === 'available' && j.runAt.getTime() > Date.now() ? `in ${age(j.runAt.getTime() - Date.now())}` : age(Date.now() - (j.finishedAt ?? j.startedAt ?? j.createdAt).getTime());
  return [j.id, j.kind, j.queue, j.state, `${j.attempt}/${j.maxAttempts}`, when, jobNote(j).slice(0, 60)];
}

/** The note of a listing: the job's reason, else the last error — unless it completed, when an earlier attempt's error is history, not news. */
export function jobNote(j: Pick<JobRecord, 'state' | 'reason' | 'errors'>): string {
  if (j.reason) return j.reason;
  return j.state === 'completed' ? '' : (j.errors.at(-1)?.message ?? '');
}

/** Prints one job in full: fields, then its error history. */
function showJob(j: JobRecord): void {
  const rows: [string, unknown][] = [
    ['id', j.id], ['kind', j.kind], ['queue', j.queue], ['state', j.state], ['priority', j.priority],
    ['attempt', `${j.attempt} of ${j.maxAttempts}`], ['delivery', j.delivery], ['run at', j.runAt.toISOString()],
    ['created', j.createdAt.toISOString()], ['started', j.startedAt?.toISOString()], ['finished', j.finishedAt?.toISOString()],
    ['expires', j.expiresAt?.toISOString()], ['dedupe key', j.dedupeKey], ['lease', j.leaseOwner ? `${j.leaseOwner} token ${j.leaseToken} until ${j.leaseExpiresAt?.toISOString()}` : j.leaseToken ? `last token ${j.leaseToken}` : undefined],
    ['reason', j.reason],
  ];
  for (const [k, v] of rows) if (v !== undefined && v !== null) out(`${k.padEnd(11)} ${String(v)}`);
  if (j.errors.length) {
    out('errors:');
    for (const e of j.errors) out(`  attempt ${e.attempt} ${e.at} [${e.kind}${e.code ? ` ${e.code}` : ''}] ${e.message}`);
  }
}

function bulkFilter(f: FilterFlags, ids: string[]): Omit<BulkOptions, 'dryRun'> {
  return {
    ...(f.kind ? { kind: f.kind } : {}),
    ...(f.queue ? { queue: f.queue } : {}),
    ...(f.state ? { state: listFlag(f.state) as JobState[] } : {}),
    ...(ids.length ? { ids } : {}),
  };
}

/** `nightshift jobs list|show|retry|cancel|run-now|resolve`. */
export function registerJobs(program: Command): void {
  const jobs = program.command('jobs').description('list, inspect, retry, cancel and resolve jobs');

  jobs
    .command('list')
    .description('jobs, newest first')
    .option('--kind <kind>')
    .option('--queue <queue>')
    .option('--state <states>', 'comma-separated states (available, running, completed, discarded, cancelled, expired, held, abandoned)')
    .option('--limit <n>', 'at most n jobs', '50')
    .option('--before <id>', 'only jobs with a smaller id (paging)')
    .option('--json', 'print JSON')
    .action(async (f: FilterFlags & { limit: string; before?: string; json?: boolean }, cmd: Command) => {
      const ctx = await cliContext(cmd.optsWithGlobals<GlobalOptions>());
      const list = await withClient(ctx, (ns) =>
        ns.listJobs({ ...bulkFilter(f, []), limit: intFlag('limit', f.limit)!, ...(f.before ? { beforeId: f.before } : {}) }),
      );
      if (f.json) return json(list);
      out(table(['id', 'kind', 'queue', 'state', 'attempt', 'when', 'note'], list.map(jobLine)));
    });

  jobs
    .command('show <id>')
    .description('one job with its error history')
    .option('--json', 'print JSON')
    .action(async (id: string, f: { json?: boolean }, cmd: Command) => {
      const ctx = await cliContext(cmd.optsWithGlobals<GlobalOptions>());
      const [job, logs] = await withClient(ctx, async (ns) => [await ns.getJob(id), await ns.jobLogs(id)] as const);
      if (f.json) return json({ ...job, logs });
      showJob(job);
      if (logs.length) {
        out('log:');
        for (const l of logs) out(`  attempt ${l.attempt} ${l.at.toISOString()} ${l.level.padEnd(5)} ${l.msg}${l.fields ? ` ${JSON.stringify(l.fields)}` : ''}`);
      }
    });

  const bulk = (name: 'retry' | 'cancel', description: string) =>
    jobs
      .command(`${name} [ids...]`)
      .description(description)
      .option('--kind <kind>', 'every job of this kind (bulk)')
      .option('--queue <queue>', 'every job of this queue (bulk)')
      .option('--state <states>', name === 'retry' ? 'states to retry (default discarded)' : 'states to cancel (default available)')
      .option('--reason <text>', 'why (kept in the audit log)')
      .option('--dry-run', 'count what would change, change nothing')
      .option('--yes', 'confirm a bulk action')
      .option('--json', 'print JSON')
      .action(async (ids: string[], f: FilterFlags & { reason?: string; dryRun?: boolean; yes?: boolean; json?: boolean }, cmd: Command) => {
        const g = cmd.optsWithGlobals<GlobalOptions>();
        const ctx = await cliContext(g);
        const isBulk = Boolean(f.kind || f.queue || f.state);
        if (!isBulk && ids.length === 0) throw new UsageError(`give job ids or a filter (--kind, --queue, --state)`, `e.g. nightshift jobs ${name} 42, or nightshift jobs ${name} --kind send-email --yes`);
        await withClient(ctx, async (ns) => {
          if (!isBulk) {
            const changed: JobRecord[] = [];
            for (const id of ids) changed.push(await (name === 'retry' ? ns.retryJob(id, { ...(f.reason ? { reason: f.reason } : {}) }) : ns.cancelJob(id, { ...(f.reason ? { reason: f.reason } : {}) })));
            if (f.json) return json(changed);
            for (const j of changed) out(`job ${j.id}: ${j.state}`);
            return;
          }
          const filter = bulkFilter(f, ids);
          const count = name === 'retry' ? await ns.retryJobs({ ...filter, dryRun: true }) : await ns.cancelJobs({ ...filter, dryRun: true });
          if (f.dryRun) {
            if (f.json) return json({ dryRun: true, matched: count });
            return out(`would ${name} ${count} job(s)`);
          }
          if (!f.yes) throw new UsageError(`this would ${name} ${count} job(s); add --yes to confirm (or --dry-run to only count)`);
          const progress = (done: number) => note(`${name}: ${done}/${count}`);
          const options = { ...filter, ...(f.reason ? { reason: f.reason } : {}), onProgress: progress };
          const done = name === 'retry' ? await ns.retryJobs(options) : await ns.cancelJobs(options);
          if (f.json) json({ changed: done });
          else out(`${name === 'retry' ? 'retried' : 'cancelled'} ${done} job(s)`);
        });
      });
  bulk('retry', 'run failed, cancelled, expired, held or abandoned jobs again now');
  bulk('cancel', 'cancel pending, held, abandoned or running jobs');

  jobs
    .command('run-now <id>')
    .description('run a pending job now: one due later (--run-at, --delay-ms, a back-off) or debounced')
    .option('--reason <text>', 'why (kept in the audit log)')
    .option('--json', 'print JSON')
    .action(async (id: string, f: { reason?: string; json?: boolean }, cmd: Command) => {
      const ctx = await cliContext(cmd.optsWithGlobals<GlobalOptions>());
      const job = await withClient(ctx, (ns) => ns.runJobNow(id, { ...(f.reason !== undefined ? { reason: f.reason } : {}) }));
      if (f.json) json(job);
      else out(`job ${job.id}: ${job.state}, runs at ${job.runAt.toISOString()}`);
    });

  jobs
    .command('resolve <id>')
    .description('resolve a held or abandoned job')
    .requiredOption('--as <outcome>', 'completed, failed or retry')
    .option('--reason <text>', 'why (kept on the job and in the audit log)')
    .option('--json', 'print JSON')
    .action(async (id: string, f: { as: string; reason?: string; json?: boolean }, cmd: Command) => {
      if (!['completed', 'failed', 'retry'].includes(f.as)) throw new UsageError(`--as must be completed, failed or retry, got "${f.as}"`);
      const ctx = await cliContext(cmd.optsWithGlobals<GlobalOptions>());
      const job = await withClient(ctx, (ns) => ns.resolveJob(id, { as: f.as as Resolution, ...(f.reason ? { reason: f.reason } : {}) }));
      if (f.json) json(job);
      else out(`job ${job.id}: ${job.state}`);
    });
}
