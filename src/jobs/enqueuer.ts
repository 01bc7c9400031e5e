import type { Database } from '../db/database.js';
import type { Executor } from '../db/executor.js';
import type { JobInsertResult, JobInsertRow } from '../db/jobs-insert.js';
import { OptionsInvalidError, StoppedError } from '../errors.js';
import type { EventBus } from '../telemetry/events.js';
import { endProducerSpan, startProducerSpan } from '../telemetry/tracing.js';
import type { JobDefinition } from './define-job.js';
import { resolveEnqueueOptions, type EnqueueOptions, type EnqueueResult, type ResolvedEnqueue } from './enqueue-options.js';
import { InsertBatcher } from './insert-batcher.js';
import { kindRow, type JobRegistry } from './job-registry.js';
import { limitKeys } from './limits.js';
import { serialisePayload, serialiseWithOutput, toJson } from './payload.js';

/** Options for one payload of a bulk enqueue: shared, or computed per payload. */
export type EnqueueManyOptions<P> = EnqueueOptions | ((payload: P, index: number) => EnqueueOptions);

/** Rows per INSERT statement of a bulk enqueue, at most. */
const BULK_CHUNK = 5_000;
/**
 * Bytes of payload per INSERT statement of a bulk enqueue, at most: the rows travel as one JSON
 * parameter, and 5,000 payloads of 1 MiB would pass what a JavaScript string and a jsonb value
 * can hold (issue 11, bug 7). A chunk is cut at this size or at BULK_CHUNK rows, whichever first.
 */
const BULK_BYTES = 16 * 1_048_576;

/** What an enqueuer is built from. */
export interface EnqueuerOptions {
  database: Database;
  registry: JobRegistry;
  /** The largest payload, in bytes of JSON. */
  maxPayloadBytes: number;
  events: EventBus;
  /** Coalescing of single enqueues: statements in flight at once, and rows per statement. */
  batching: { maxInFlight: number; maxBatch: number };
  /** Error messages in spans. Default false. */
  errorMessages?: boolean;
}

/** Validates and writes jobs: alone, in bulk, or inside the caller's transaction. */
export class Enqueuer {
  private readonly batcher: InsertBatcher;
  private readonly db: Database;
  private readonly registry: JobRegistry;
  private readonly maxPayloadBytes: number;
  private readonly events: EventBus;
  private readonly errorMessages: boolean;
  stopped = false;

  constructor(o: EnqueuerOptions) {
    this.db = o.database;
    this.registry = o.registry;
    this.maxPayloadBytes = o.maxPayloadBytes;
    this.events = o.events;
    this.errorMessages = o.errorMessages ?? false;
    const db = o.database;
    this.batcher = new InsertBatcher({
      insert: (rows) => db.inserts.insert({ rows, debounced: false }),
      maxInFlight: o.batching.maxInFlight,
      maxBatch: o.batching.maxBatch,
    });
  }

  /** Enqueues one job. Resolves once it is committed (or, with `{ db }`, once it is part of the caller's transaction). */
  async enqueue(job: JobDefinition | string, payload: unknown, options?: EnqueueOptions): Promise<EnqueueResult> {
    if (this.stopped && !options?.db) throw new StoppedError('enqueue');
    const def = this.registry.resolve(job);
    const r = await this.resolve(def, payload, options);
    const trace = startProducerSpan(def.kind, r.row.queue, r.row.traceContext);
    if (trace.carrier) r.row.traceContext = JSON.stringify(trace.carrier);
    let result: JobInsertResult;
    try {
      if (r.throttleMs !== null) result = throttledResult(await this.db.inserts.insertThrottled({ row: r.row, throttleMs: r.throttleMs, db: r.db }));
      else if (isScoped(r.row)) result = await this.insertScoped(r.db, def, r);
      else if (r.db || r.row.dedupeKey !== null) [result] = (await this.db.inserts.insert({ rows: [r.row], debounced: r.debounced, db: r.db })) as [JobInsertResult];
      else result = await this.batcher.add(r.row);
    } catch (err) {
      endProducerSpan(trace.span, undefined, err, this.errorMessages);
      throw err;
    }
    endProducerSpan(trace.span, result.id);
    this.emitEnqueued(r.row, result);
    return result;
  }

  /**
   * Enqueues many jobs of one kind atomically: every payload is validated first, and either all
   * are written or none. Repeated dedupe keys within the call behave as if enqueued one by one.
   */
  async enqueueMany<P>(job: JobDefinition | string, payloads: readonly P[], options?: EnqueueManyOptions<P>): Promise<EnqueueResult[]> {
    if (!Array.isArray(payloads)) {
      throw new OptionsInvalidError('enqueueMany', [{ path: 'payloads', message: 'must be an array of payloads' }]);
    }
    const def = this.registry.resolve(job);
    const resolved: ResolvedEnqueue[] = [];
    for (let i = 0; i < payloads.length; i++) {
      const opts = typeof options === 'function' ? options(payloads[i]!, i) : options;
      resolved.push(
        await this.resolve(def, payloads[i], opts).catch((err: unknown) => {
          throw withIndex(err, i);
        }),
      );
    }
    if (resolved.length === 0) return [];
    const dbs = new Set(resolved.map((r) => r.db));
    if (dbs.size > 1) {
      throw new OptionsInvalidError('enqueueMany', [{ path: 'db', message: 'every payload of one call must use the same db' }]);
    }
    const callerDb = resolved[0]!.db;
    if (this.stopped && !callerDb) throw new StoppedError('enqueueMany');
    // One producer span for the batch; its context goes with every job that has none of its own.
    const trace = startProducerSpan(def.kind, resolved[0]!.row.queue, null, resolved.length);
    if (trace.carrier) {
      const carrier = JSON.stringify(trace.carrier);
      for (const r of resolved) r.row.traceContext ??= carrier;
    }
    const write = (tx: Executor) => this.insertRounds(tx, def, resolved);
    let results: EnqueueResult[];
    try {
      results = callerDb ? await write(callerDb) : await this.db.transaction(write);
    } catch (err) {
      endProducerSpan(trace.span, undefined, err, this.errorMessages);
      throw err;
    }
    endProducerSpan(trace.span, undefined);
    resolved.forEach((r, i) => this.emitEnqueued(r.row, results[i]!));
    return results;
  }

  /**
   * Enqueues a kind this client does not define, through the SQL function (which knows every kind
   * registered by some client). Options are checked here; the kind's defaults come from the
   * database; the payload is checked against the schema only when the job runs.
   */
  async enqueueRegistered(kind: string, payload: unknown, options?: EnqueueOptions): Promise<EnqueueResult> {
    if (this.stopped && !options?.db) throw new StoppedError('enqueue');
    const json = toJson(kind, payload, this.maxPayloadBytes);
    const pseudo = { kind, queue: 'default', priority: 0, maxAttempts: 1, delivery: 'at-least-once' } as JobDefinition;
    const r = resolveEnqueueOptions(pseudo, options, json);
    const o = options ?? {};
    if (r.throttleMs !== null) {
      throw new OptionsInvalidError(`enqueue options for "${kind}"`, [{ path: 'throttleMs', message: "needs the kind's definition in this client (a throttle is written with the kind's defaults)" }]);
    }
    const result = await this.db.inserts.viaSql({
      db: r.db,
      kind,
      payload: json,
      queue: o.queue ?? null,
      runAt: r.row.runAt,
      delayMs: r.debounced ? null : r.row.delayMs,
      priority: o.priority ?? null,
      maxAttempts: o.maxAttempts ?? null,
      dedupeKey: r.row.dedupeKey,
      debounceMs: r.debounced ? r.row.delayMs : null,
      expiresAt: r.row.expiresAt,
      maxAgeMs: r.row.maxAgeMs,
      traceContext: r.row.traceContext,
    });
    return result;
  }

  /**
   * A key of the `active`, `ever` or `within` scope: written through the SQL function, which holds
   * those rules (and needs the kind registered with its scope, done here once per kind).
   */
  private async insertScoped(db: Executor | undefined, def: JobDefinition, r: ResolvedEnqueue): Promise<JobInsertResult> {
    if (!this.registered.has(def.kind)) {
      await this.db.queues.registerKinds([kindRow(def)]);
      this.registered.add(def.kind);
    }
    const row = r.row;
    return this.db.inserts.viaSql({
      db,
      kind: row.kind,
      payload: row.payload,
      queue: row.queue,
      runAt: row.runAt,
      delayMs: row.delayMs,
      priority: row.priority,
      maxAttempts: row.maxAttempts,
      dedupeKey: row.dedupeKey,
      debounceMs: null,
      expiresAt: row.expiresAt,
      maxAgeMs: row.maxAgeMs,
      traceContext: row.traceContext,
      limitKeys: row.limitKeys,
    });
  }

  /**
   * Validates the payload and the options into the row to insert; a limited kind's keys are
   * computed from the schema's output (its key functions), so a key that cannot be computed
   * fails the enqueue before anything is written.
   */
  private async resolve(def: JobDefinition, payload: unknown, options: EnqueueOptions | undefined): Promise<ResolvedEnqueue> {
    const limits = def.limits ?? [];
    if (limits.length === 0) return resolveEnqueueOptions(def, options, await serialisePayload(def.kind, def.schema, payload, this.maxPayloadBytes));
    const { json, output } = await serialiseWithOutput(def.kind, def.schema, payload, this.maxPayloadBytes);
    const r = resolveEnqueueOptions(def, options, json);
    r.row.limitKeys = limitKeys(def.kind, limits, output);
    return r;
  }

  private readonly registered = new Set<string>();

  /** Waits until coalesced enqueues in flight have settled. */
  async drain(): Promise<void> {
    while (this.batcher.size > 0) await new Promise((r) => setImmediate(r));
  }

  // One statement may not touch the same pending job twice, so rows repeating a (kind, key)
  // already in the round go to the next round, in order; rounds run in one transaction. Keys of
  // the other scopes go one by one through the SQL function, in order with their round.
  private async insertRounds(tx: Executor, def: JobDefinition, rows: ResolvedEnqueue[]): Promise<EnqueueResult[]> {
    const results: EnqueueResult[] = new Array(rows.length);
    let remaining = rows.map((r, i) => ({ r, i }));
    while (remaining.length > 0) {
      const seen = new Set<string>();
      const round: typeof remaining = [];
      const later: typeof remaining = [];
      for (const item of remaining) {
        const key = item.r.row.dedupeKey === null ? null : `${item.r.throttleMs !== null ? 't' : item.r.debounced}:${item.r.row.dedupeKey}`;
        if (key !== null && seen.has(key)) later.push(item);
        else {
          if (key !== null) seen.add(key);
          round.push(item);
        }
      }
      for (const x of round.filter((x) => x.r.throttleMs !== null)) {
        results[x.i] = throttledResult(await this.db.inserts.insertThrottled({ row: x.r.row, throttleMs: x.r.throttleMs!, db: tx }));
      }
      for (const x of round.filter((x) => x.r.throttleMs === null && isScoped(x.r.row))) results[x.i] = await this.insertScoped(tx, def, x.r);
      for (const debounced of [false, true]) {
        const part = round.filter((x) => x.r.debounced === debounced && x.r.throttleMs === null && !isScoped(x.r.row));
        for (const chunk of chunks(part, (x) => x.r.row.payload.length)) {
          const out = await this.db.inserts.insert({ rows: chunk.map((x) => x.r.row) as JobInsertRow[], debounced, db: tx });
          chunk.forEach((x, k) => (results[x.i] = out[k]!));
        }
      }
      remaining = later;
    }
    return results;
  }

  private emitEnqueued(row: JobInsertRow, result: JobInsertResult): void {
    if (!this.events.wants('job.enqueued')) return;
    this.events.emit({ type: 'job.enqueued', jobId: result.id, kind: row.kind, queue: row.queue, deduped: result.deduped });
  }
}

/** A throttled insert's result: a dropped repeat says so. */
function throttledResult(r: JobInsertResult): EnqueueResult {
  return r.deduped ? { id: r.id, deduped: true, throttled: true } : { id: r.id, deduped: false };
}

/** Whether a row's key holds in a scope other than `pending` (written through the SQL function). */
function isScoped(row: JobInsertRow): boolean {
  return row.dedupeKey !== null && row.dedupeScope !== 'pending';
}

/** Cuts `items` into runs of at most BULK_CHUNK items and about BULK_BYTES of `size` (a single larger item goes alone). */
function chunks<T>(items: readonly T[], size: (item: T) => number): T[][] {
  const out: T[][] = [];
  let current: T[] = [];
  let bytes = 0;
  for (const item of items) {
    const n = size(item);
    if (current.length > 0 && (current.length >= BULK_CHUNK || bytes + n > BULK_BYTES)) {
      out.push(current);
      current = [];
      bytes = 0;
    }
    current.push(item);
    bytes += n;
  }
  if (current.length > 0) out.push(current);
  return out;
}

function withIndex(err: unknown, index: number): unknown {
  if (err instanceof Error) err.message = `payloads[${index}]: ${err.message}`;
  return err;
}
