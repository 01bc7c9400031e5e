import type { BugId } from './known-open.js';

/** The invariants of the model, by id, with what each says. */
export const INVARIANTS = {
  'starts-when-free': 'every due job in a claimed queue starts within the bound once a process claiming it has a free slot (and its fleet-wide limits have room)',
  'rescue-progresses': 'no expired lease stays unrescued past the bound while some process can run maintenance',
  'nothing-lost': 'every enqueued job exists and ends in a state the model allows, or is legitimately pending',
  'finished-with-cause': 'no job is completed, discarded, expired or abandoned without a cause the model allows',
  'no-unexplained-rerun': 'no job runs again beyond the documented causes; an at-most-once job never runs twice',
  'deadline-kept': 'no job starts after its deadline',
  'dedupe-holds': 'at most one pending job per (kind, key), and no unique violation in any worker log',
  'limit-holds': 'no fleet-wide limit is exceeded: no more runs of a limit key hold their lease at once than its limit, in the run logs and in every sample',
  'stops-on-sigterm': 'every process exits cleanly on SIGTERM within its grace, the abort grace and the margin',
} as const;

export type InvariantId = keyof typeof INVARIANTS;

/** One broken invariant, with its evidence and the known bugs whose signature it matches. */
export interface Violation {
  invariant: InvariantId;
  job?: string;
  detail: string;
  suspects: BugId[];
}
