import type { JobLogger } from '../jobs/define-job.js';
import { cleanText } from '../jobs/error-text.js';
import type { Logger } from '../telemetry/logger.js';

/** Bounds of what one attempt's log keeps with the job. */
export const JOB_LOG_LIMITS = { lines: 100, messageChars: 2_000, fieldsChars: 4_000 };

type Level = 'debug' | 'info' | 'warn' | 'error';

/** A line as buffered, before it is written. */
export interface BufferedLine {
  seq: number;
  at: Date;
  level: Level;
  msg: string;
  fields: Record<string, unknown> | null;
}

/**
 * `ctx.log`: logs through the process logger (with the job's ids) and keeps the lines of the
 * attempt, bounded in count and size, to be written with the job when the attempt ends — the
 * per-run log of seed 001. Keys the logger redacts are redacted here too. Past the bound, one
 * final line says how many were dropped.
 */
export class JobLog implements JobLogger {
  readonly lines: BufferedLine[] = [];
  private dropped = 0;
  private child: Logger | undefined;

  constructor(
    private readonly base: Logger,
    private readonly bindings: Record<string, unknown>,
    private readonly redact: ReadonlySet<string>,
  ) {}

  debug(obj: object | string, msg?: string): void {
    this.write('debug', obj, msg);
  }
  info(obj: object | string, msg?: string): void {
    this.write('info', obj, msg);
  }
  warn(obj: object | string, msg?: string): void {
    this.write('warn', obj, msg);
  }
  error(obj: object | string, msg?: string): void {
    this.write('error', obj, msg);
  }

  /** The lines to store, with a note when some were dropped. */
  take(): BufferedLine[] {
    if (this.dropped > 0) {
      this.lines.push({ seq: this.lines.length, at: new Date(), level: 'warn', msg: `${this.dropped} more line(s) not kept (limit ${JOB_LOG_LIMITS.lines} per attempt)`, fields: null });
      this.dropped = 0;
    }
    return this.lines;
  }

  private write(level: Level, obj: object | string, msg?: string): void {
    this.child ??= this.base.child(this.bindings);
    if (typeof obj === 'string') this.child[level](obj);
    else this.child[level](obj, msg);
    if (this.lines.length >= JOB_LOG_LIMITS.lines - 1) {
      this.dropped++;
      return;
    }
    const text = typeof obj === 'string' ? obj : (msg ?? '');
    this.lines.push({
      seq: this.lines.length,
      at: new Date(),
      level,
      msg: cleanText(text, JOB_LOG_LIMITS.messageChars),
      fields: typeof obj === 'object' && obj !== null ? this.safeFields(obj) : null,
    });
  }

  private scrub(value: unknown, depth: number): unknown {
    if (typeof value !== 'object' || value === null || depth > 4) return value;
    if (Array.isArray(value)) return value.map((v) => this.scrub(v, depth + 1));
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = this.redact.has(k) ? '[redacted]' : this.scrub(v, depth + 1);
    return out;
  }

  private safeFields(obj: object): Record<string, unknown> | null {
    const out = this.scrub(obj, 0) as Record<string, unknown>;
    let json: string;
    try {
      json = JSON.stringify(out, (_k, v: unknown) => (typeof v === 'bigint' ? v.toString() : v));
    } catch {
      return { note: 'fields not serialisable' };
    }
    if (json === undefined || json === '{}') return null;
    const clean = cleanText(json, JOB_LOG_LIMITS.fieldsChars + 1);
    if (clean.length > JOB_LOG_LIMITS.fieldsChars || clean !== json) return { note: 'fields too large or not storable; see the process log' };
    return JSON.parse(clean) as Record<string, unknown>;
  }
}
