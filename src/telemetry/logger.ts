import { hostname } from 'node:os';
import { pino, type Logger } from 'pino';
import { elideDataUrls } from './data-urls.js';
import type { EventBus, NightshiftEvent } from './events.js';

export type { Logger };

/** Keys redacted wherever they appear (top level or one level down) in every log line. */
export const DEFAULT_REDACT = ['password', 'secret', 'apiKey', 'authorization', 'cookie', 'databaseUrl', 'connectionString', 'payload', 'result'];

/** Options of the default logger. */
export interface LoggerOptions {
  level?: string;
  name?: string;
  /** More keys to redact, besides {@link DEFAULT_REDACT}. */
  redact?: string[];
  /** Human-readable lines instead of JSON. Default: when stdout is a terminal and NODE_ENV is not production. */
  pretty?: boolean;
  /** Where JSON lines go. Default stdout. */
  destination?: { write(line: string): unknown };
}

/**
 * The default logger: JSON lines (readable in a terminal in development), each carrying the
 * process (`pid`, `host`), with credentials, payloads and `data:` URLs redacted. `NIGHTSHIFT_LOG_LEVEL` sets the
 * level (default `info`).
 */
export function createLogger(options: LoggerOptions = {}): Logger {
  const keys = [...DEFAULT_REDACT, ...(options.redact ?? [])];
  const pretty = options.destination ? false : (options.pretty ?? (process.stdout.isTTY === true && process.env.NODE_ENV !== 'production'));
  const config = {
    name: options.name ?? 'nightshift',
    level: options.level ?? process.env.NIGHTSHIFT_LOG_LEVEL ?? 'info',
    base: { pid: process.pid, host: hostname() },
    redact: { paths: [...keys, ...keys.map((k) => `*.${k}`)], censor: '[redacted]' },
    // A stack through code loaded from a `data:` URL quotes that code (a transpiled config file
    // and its secrets): elided from every line, whatever field it is in.
    hooks: { streamWrite: elideDataUrls },
    ...(pretty ? { transport: { target: 'pino-pretty', options: { colorize: true, ignore: 'pid,host,name', translateTime: 'SYS:HH:MM:ss.l' } } } : {}),
  };
  return options.destination ? pino(config, options.destination as never) : pino(config);
}

/** A logger that drops everything. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

const LEVEL: Record<NightshiftEvent['type'], 'trace' | 'debug' | 'info' | 'warn' | 'error'> = {
  'job.enqueued': 'debug',
  'job.started': 'debug',
  'job.completed': 'debug',
  'job.failed': 'warn',
  'job.retried': 'debug',
  'job.discarded': 'error',
  'job.held': 'warn',
  'job.expired': 'info',
  'job.cancelled': 'info',
  'job.rescued': 'warn',
  'job.abandoned': 'error',
  'job.released': 'info',
  'job.resolved': 'info',
  'job.refused': 'warn',
  'job.lease-lost': 'warn',
  'job.handler-stuck': 'error',
  'schema.newer': 'warn',
  'worker.claimed': 'trace',
  'worker.polled': 'trace',
  'worker.limited': 'trace',
  'listener.connected': 'debug',
  'listener.lost': 'warn',
  'listener.proven': 'debug',
  'listener.unproven': 'warn',
  'database.prepared-statements-off': 'warn',
  'listener.notified': 'trace',
  'worker.started': 'info',
  'worker.stopping': 'info',
  'worker.stopped': 'info',
  'worker.error': 'error',
  'process.started': 'info',
  'process.stopping': 'info',
  'maintenance.ran': 'debug',
  'leader.elected': 'info',
  'leader.deposed': 'warn',
  'daemon.failed': 'error',
  'schedule.fired': 'debug',
  'schedule.skipped': 'info',
  'schedule.queued': 'info',
  'schedule.failed': 'error',
  'schedule.caught-up': 'warn',
  'stream.published': 'debug',
  'stream.handled': 'debug',
  'stream.failed': 'warn',
  'stream.dead-lettered': 'error',
  'stream.expired': 'info',
  'stream.reclaimed': 'warn',
  'stream.handed-back': 'info',
  'stream.consumer-started': 'info',
  'stream.consumer-stopped': 'info',
  'stream.reclaim-unavailable': 'warn',
  'stream.error': 'error',
  'stream.group-created': 'info',
  'stream.connection-lost': 'warn',
  'stream.connected': 'info',
  'alert.opened': 'info',
  'alert.changed': 'info',
  'alert.reminded': 'info',
  'alert.resolved': 'info',
  'alert.acknowledged': 'info',
  'check.ran': 'debug',
  'check.failed': 'info',
  'pipeline.started': 'info',
  'pipeline.step-finished': 'debug',
  'pipeline.finished': 'info',
  'pipeline.held': 'error',
  'pipeline.deadline-missed': 'warn',
  'pipeline.artifacts-mismatch': 'error',
  'pipeline.follow-up-failed': 'error',
  'pipeline.action': 'info',
};

/**
 * The level an event is logged at: its type's, except a term handed back by a clean stop
 * (`leader.deposed` with reason `released`), which is news (info), not a warning: only a term
 * lost or expired means another process may be leading now.
 */
function levelOf(event: NightshiftEvent): (typeof LEVEL)[NightshiftEvent['type']] {
  if (event.type === 'leader.deposed' && event.reason === 'released') return 'info';
  return LEVEL[event.type] ?? 'info';
}

/** Event fields that may hold an error message written by application code (which may quote secrets). */
const ERROR_FIELDS = new Set(['error']);

/**
 * Writes events to the logger: ids, kinds, queues, attempts and outcomes — never payloads, and not
 * error messages unless `errorMessages` is on (a message may quote whatever the failing code had
 * in hand; it is stored with the job, where access is controlled, and shown by `jobs show`).
 * Subscribes with the logger's level as a filter, so per-job events below it are never built.
 */
export function logEvents(bus: EventBus, logger: Logger, options: { errorMessages?: boolean } = {}): () => void {
  return bus.on(
    (event) => {
      const level = levelOf(event);
      if (!logger.isLevelEnabled(level)) return;
      const { type, at: _at, ...fields } = event as NightshiftEvent & { at: number };
      const line: Record<string, unknown> = { event: type };
      for (const [k, v] of Object.entries(fields)) {
        if (ERROR_FIELDS.has(k) && !options.errorMessages) continue;
        line[k] = v;
      }
      logger[level](line, type);
    },
    // Asked at each emit site, so a level changed at run time still takes effect. By type, so at
    // the type's level: an event logged lower (levelOf) is checked again above.
    (type) => logger.isLevelEnabled(LEVEL[type] ?? 'info'),
  );
}
