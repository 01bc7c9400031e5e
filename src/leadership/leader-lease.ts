/** A term of leadership: this process holds the lease until `signal` aborts. */
export interface LeaderTerm {
  /** The fencing token of this term; strictly greater than every earlier term's token for the same name. */
  readonly token: string;
  /** Aborted when the term ends: the lease was lost (not renewed in time, taken over) or released on stop. */
  readonly signal: AbortSignal;
  /**
   * Whether the term still holds by this process's monotonic clock: false once the time by which
   * a renewal had to succeed has passed — even when the timer that would end the term has not run
   * yet (the process was frozen, and timers fire in no guaranteed order on waking). A false answer
   * ends the term at once (its signal aborts).
   */
  held(): boolean;
}

/**
 * Leadership of one name among the processes of a fleet: a lease row in PostgreSQL with a fencing
 * token, renewed by its holder (never a session advisory lock, which transaction poolers break).
 * Daemons, singleton stream consumers and leader-only maintenance are built on it.
 */
export interface LeaderLease {
  readonly name: string;
  /** The current term, or undefined when this process is not the leader. */
  readonly term: LeaderTerm | undefined;
  /** Called when this process is elected (with the term) or deposed (undefined). Returns the unsubscribe function. */
  onChange(listener: (term: LeaderTerm | undefined) => void): () => void;
  /** Starts campaigning. Safe twice. */
  start(): Promise<void>;
  /** Stops campaigning and releases the lease if held, so another process takes over at once. Safe before start and twice. */
  stop(): Promise<void>;
}
