import type { KindRow } from '../db/queues.js';
import { DuplicateKindError, UnknownKindError } from '../errors.js';
import { scopeName, type JobDefinition } from './define-job.js';

/** The job kinds a client knows, by kind. */
export class JobRegistry {
  private readonly byKind = new Map<string, JobDefinition>();

  constructor(defs: readonly JobDefinition[]) {
    for (const def of defs) {
      const existing = this.byKind.get(def.kind);
      if (existing && existing !== def) throw new DuplicateKindError(def.kind);
      this.byKind.set(def.kind, def);
    }
  }

  /** The definition for a kind name or a definition object (which need not be registered: producers may enqueue kinds they do not run). */
  resolve(job: JobDefinition | string): JobDefinition {
    if (typeof job !== 'string') {
      if (job && typeof job === 'object' && typeof job.kind === 'string' && job.schema) return job;
      throw new UnknownKindError(String(job), this.kinds());
    }
    const def = this.byKind.get(job);
    if (!def) throw new UnknownKindError(job, this.kinds());
    return def;
  }

  get(kind: string): JobDefinition | undefined {
    return this.byKind.get(kind);
  }

  kinds(): string[] {
    return [...this.byKind.keys()];
  }

  all(): JobDefinition[] {
    return [...this.byKind.values()];
  }

  /** Rows for the kinds table (defaults SQL callers use). */
  kindRows(): KindRow[] {
    return this.all().map(kindRow);
  }
}

/** A kind's row in the kinds table: the defaults and dedupe scope the SQL function applies. */
export function kindRow(d: JobDefinition): KindRow {
  return {
    kind: d.kind,
    queue: d.queue,
    priority: d.priority,
    maxAttempts: d.maxAttempts,
    atMostOnce: d.delivery === 'at-most-once',
    dedupeScope: scopeName(d.dedupeScope ?? 'pending'),
    dedupeWithinMs: typeof d.dedupeScope === 'object' ? d.dedupeScope.withinMs : null,
  };
}
