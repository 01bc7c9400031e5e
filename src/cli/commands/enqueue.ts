import type { Command } from 'commander';
import { isNightshiftError, UnknownKindError, type EnqueueOptions, type EnqueueResult } from '../../index.js';
import type { CliRun } from '../cli-io.js';
import { clientCommand } from '../client-command.js';
import { UsageError } from '../exit-codes.js';
import { intFlag, jsonFlag } from '../parse.js';

interface EnqueueFlags {
  payload?: string;
  runAt?: string;
  delayMs?: string;
  priority?: string;
  queue?: string;
  maxAttempts?: string;
  dedupeKey?: string;
  debounceMs?: string;
  expiresAt?: string;
  maxAgeMs?: string;
  reason?: string;
}

/**
 * `nightshift enqueue <kind> --payload JSON`: validates the payload against the kind's schema when
 * the config defines the kind; otherwise enqueues through the SQL function, which knows every kind
 * a client has registered. Audited: the job and an audit entry (actor, job id, kind — no payload)
 * are written in one transaction.
 */
export function registerEnqueue(program: Command, run: CliRun): void {
  clientCommand<EnqueueFlags, [string], EnqueueResult>(
    program
      .command('enqueue <kind>')
      .description('enqueue one job')
      .option('--payload <json>', 'the payload as JSON', '{}')
      .option('--run-at <iso>', 'run at this time (ISO-8601 with a zone, e.g. 2026-01-31T12:00:00Z)')
      .option('--delay-ms <n>', 'run after this many milliseconds')
      .option('--priority <n>', 'lower runs first, -1000..1000')
      .option('--queue <name>', "queue (default: the kind's)")
      .option('--max-attempts <n>', 'attempts before it is discarded')
      .option('--dedupe-key <key>', 'at most one pending job with this key')
      .option('--debounce-ms <n>', 'with --dedupe-key: move the pending job to now + n ms')
      .option('--expires-at <iso>', 'not run if not started by then')
      .option('--max-age-ms <n>', 'not run if not started within n ms')
      .option('--reason <text>', 'why (kept in the audit log with who enqueued it)'),
    run,
    {
      fetch: (ns, { flags: f, args: [kind], ctx }) => {
        const payload = jsonFlag('payload', f.payload);
        const options: EnqueueOptions = {
          ...(f.runAt !== undefined ? { runAt: f.runAt } : {}),
          ...(f.delayMs !== undefined ? { delayMs: intFlag('delay-ms', f.delayMs)! } : {}),
          ...(f.priority !== undefined ? { priority: intFlag('priority', f.priority)! } : {}),
          ...(f.queue !== undefined ? { queue: f.queue } : {}),
          ...(f.maxAttempts !== undefined ? { maxAttempts: intFlag('max-attempts', f.maxAttempts)! } : {}),
          ...(f.dedupeKey !== undefined ? { dedupeKey: f.dedupeKey } : {}),
          ...(f.debounceMs !== undefined ? { debounceMs: intFlag('debounce-ms', f.debounceMs)! } : {}),
          ...(f.expiresAt !== undefined ? { expiresAt: f.expiresAt } : {}),
          ...(f.maxAgeMs !== undefined ? { maxAgeMs: intFlag('max-age-ms', f.maxAgeMs)! } : {}),
        };
        if (!kind.trim()) throw new UsageError('the kind must not be empty');
        const kinds = (ctx.loaded.config.jobs ?? []).map((j) => j.kind);
        // The job and its audit entry (who enqueued which job of which kind; never the payload)
        // commit together, or neither does.
        return ns.transaction(async (tx) => {
          const inTx = { ...options, db: tx };
          const r = kinds.includes(kind)
            ? await ns.enqueue(kind, payload as never, inTx)
            : await ns.enqueueRegistered(kind, payload, inTx).catch((err: unknown) => {
                // The database knows no such kind either: suggest the config's kinds (a typo of one, most likely).
                throw isNightshiftError(err) && err.code === 'NS_UNKNOWN_KIND' ? new UnknownKindError(kind, kinds) : err;
              });
          await ns.auditEnqueued({ id: r.id, kind, deduped: r.deduped }, { db: tx, ...(f.reason !== undefined ? { reason: f.reason } : {}) });
          return r;
        });
      },
      human: (r) => [r.deduped ? `job ${r.id} (deduped: a pending job with that key absorbed it)` : `job ${r.id} enqueued`],
    },
  );
}
