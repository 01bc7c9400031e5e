import { pino, type Logger } from 'pino';
import type { EventBus, NightshiftEvent } from './events.js';

export type { Logger };

/** The default logger: JSON to stdout at `NIGHTSHIFT_LOG_LEVEL` (default `info`), secrets redacted. */
export function createLogger(options: { level?: string; name?: string } = {}): Logger {
  return pino({
    name: options.name ?? 'nightshift',
    level: options.level ?? process.env.NIGHTSHIFT_LOG_LEVEL ?? 'info',
    base: { pid: process.pid },
    redact: {
      // Fencing tokens are not secrets; credentials and payloads are.
      paths: ['password', '*.password', 'secret', '*.secret', 'apiKey', '*.apiKey', 'authorization', '*.authorization', 'databaseUrl', 'connectionString', 'payload', '*.payload'],
      censor: '[redacted]',
    },
  });
}

/** A logger that drops everything. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}

const LEVEL: Partial<Record<NightshiftEvent['type'], 'debug' | 'info' | 'warn' | 'error'>> = {
  'job.enqueued': 'debug',
  'job.started': 'debug',
  'job.completed': 'debug',
  'job.failed': 'warn',
  'job.discarded': 'error',
  'job.held': 'warn',
  'job.expired': 'info',
  'job.cancelled': 'info',
  'job.rescued': 'warn',
  'job.released': 'info',
  'job.refused': 'warn',
  'job.lease-lost': 'warn',
  'worker.claimed': 'trace' as 'debug',
  'listener.connected': 'debug',
  'listener.lost': 'warn',
  'listener.notified': 'trace' as 'debug',
  'worker.started': 'info',
  'worker.stopping': 'info',
  'worker.stopped': 'info',
  'worker.error': 'error',
  'maintenance.ran': 'debug',
  'leader.elected': 'info',
  'leader.deposed': 'warn',
  'daemon.failed': 'error',
  'schedule.fired': 'debug',
  'schedule.skipped': 'info',
  'schedule.queued': 'info',
  'schedule.failed': 'error',
  'schedule.caught-up': 'warn',
};

/** Writes events to the logger: ids, kinds and outcomes, never payloads. */
export function logEvents(bus: EventBus, logger: Logger): () => void {
  return bus.on((event) => {
    const level = LEVEL[event.type] ?? 'info';
    if (!logger.isLevelEnabled(level)) return;
    const { type, at: _at, ...fields } = event;
    logger[level]({ event: type, ...fields }, type);
  });
}
