import type { JobState, Nightshift, SearchJobsOptions } from '../index.js';

/** What a bulk action does to each job it matches. */
export type BulkActionName = 'retry' | 'cancel';

/** The jobs a bulk action applies to: the ids selected, or everything matching a filter. */
export interface BulkTarget {
  ids?: string[];
  filter?: Pick<SearchJobsOptions, 'kind' | 'queue' | 'state' | 'payload' | 'createdAfter' | 'createdBefore'>;
}

/** A bulk action's progress, as its page shows it. */
export interface BulkProgress {
  id: number;
  action: BulkActionName;
  actor: string;
  reason: string | null;
  /** What it applies to, in words. */
  target: string;
  /** Jobs matched when it started (capped: `totalCapped` says it is a lower bound). */
  total: number;
  totalCapped: boolean;
  done: number;
  state: 'running' | 'stopping' | 'stopped' | 'done' | 'failed';
  error: string | null;
  startedAt: Date;
  finishedAt: Date | null;
}

const FROM: Record<BulkActionName, JobState[]> = {
  retry: ['discarded', 'cancelled', 'expired', 'abandoned', 'held', 'completed'],
  cancel: ['available', 'running', 'held', 'abandoned'],
};

const BATCH = 200;

/**
 * Runs bulk retries and cancels in the background, a batch at a time through the admin API (each
 * job's change audited with the actor and the reason), with progress and a stop between batches.
 * The filter is resolved as it goes, newest job first, from where it started: jobs enqueued after
 * the start are not touched.
 */
export class BulkRunner {
  private readonly runs = new Map<number, BulkProgress & { stop: boolean }>();
  private next = 1;
  private readonly pending = new Set<Promise<void>>();

  constructor(
    private readonly api: Nightshift,
    private readonly o: { window: number; cap: number },
  ) {}

  /** Every bulk action of this dashboard process, newest first. */
  list(): BulkProgress[] {
    return [...this.runs.values()].reverse().map(({ stop: _stop, ...p }) => ({ ...p }));
  }

  get(id: number): BulkProgress | undefined {
    const r = this.runs.get(id);
    if (!r) return undefined;
    const { stop: _stop, ...p } = r;
    return { ...p };
  }

  /** Starts a bulk action; resolves once its total is counted, with its id. */
  async start(p: { action: BulkActionName; target: BulkTarget; actor: string; reason: string | null; describe: string }): Promise<number> {
    const states = narrow(FROM[p.action], p.target.filter?.state);
    const search: SearchJobsOptions = { ...(p.target.filter ?? {}), state: states, window: this.o.window };
    const ids = p.target.ids;
    const total = ids ? ids.length : await this.api.countJobs({ ...search, cap: this.o.cap });
    const id = this.next++;
    const run = {
      id,
      action: p.action,
      actor: p.actor,
      reason: p.reason,
      target: p.describe,
      total: Math.min(total, this.o.cap),
      totalCapped: total > this.o.cap,
      done: 0,
      state: 'running' as BulkProgress['state'],
      error: null as string | null,
      startedAt: new Date(),
      finishedAt: null as Date | null,
      stop: false,
    };
    this.runs.set(id, run);
    const work = this.work(run, search, states, ids).finally(() => this.pending.delete(work));
    this.pending.add(work);
    return id;
  }

  /** Asks a running bulk action to stop after its current batch. */
  stop(id: number): boolean {
    const r = this.runs.get(id);
    if (!r || r.state !== 'running') return false;
    r.stop = true;
    r.state = 'stopping';
    return true;
  }

  /** Stops every running action and waits for them (the dashboard's close). */
  async close(): Promise<void> {
    for (const r of this.runs.values()) r.stop = true;
    await Promise.all([...this.pending]);
  }

  private async work(run: BulkProgress & { stop: boolean }, search: SearchJobsOptions, states: JobState[], ids: string[] | undefined): Promise<void> {
    const change = (batch: string[]) => {
      const o = { ids: batch, state: states, actor: run.actor, reason: `bulk ${run.action} #${run.id}${run.reason ? `: ${run.reason}` : ''}` };
      return run.action === 'retry' ? this.api.retryJobs(o) : this.api.cancelJobs(o);
    };
    try {
      if (ids) {
        for (let i = 0; i < ids.length && !run.stop; i += BATCH) run.done += await change(ids.slice(i, i + BATCH));
      } else {
        let beforeId: string | undefined;
        while (!run.stop) {
          const page = await this.api.searchJobs({ ...search, limit: BATCH, ...(beforeId ? { beforeId } : {}) });
          if (page.length === 0) break;
          beforeId = page[page.length - 1]!.id;
          run.done += await change(page.map((j) => j.id));
        }
      }
      run.state = run.stop ? 'stopped' : 'done';
    } catch (err) {
      run.state = 'failed';
      // The code only: an error message may quote job data.
      run.error = (err as { code?: string }).code ?? 'error';
    }
    run.finishedAt = new Date();
  }
}

function narrow(from: JobState[], state: JobState | JobState[] | undefined): JobState[] {
  if (state === undefined) return from;
  const asked = Array.isArray(state) ? state : [state];
  return asked.filter((s) => from.includes(s));
}
