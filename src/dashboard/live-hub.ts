/** One open page's subscription: how often it wants updates, and where they go. */
interface Subscriber {
  everyMs: number;
  sentAt: number;
  send(data: unknown): void;
}

interface Entry {
  load: () => Promise<unknown>;
  subscribers: Set<Subscriber>;
  data: unknown;
  loadedAt: number;
  /** When the newest load began (performance.now()). */
  startedAt: number;
  loading: Promise<unknown> | undefined;
}

/** The load work of the hub: how many page loads ran, and the time they took (for the bench and /healthz). */
export interface HubStats {
  loads: number;
  loadMs: number;
  keys: number;
  subscribers: number;
}

/**
 * One server-side poll shared by every open page: a page's data is loaded once per interval for
 * all the tabs showing it (keyed by its URL), whatever their number, and each tab is sent the
 * newest data at the rate it chose. A page request reuses data loaded less than `freshMs` ago.
 * Nothing is loaded for a page nobody has open.
 */
export class LiveHub {
  private readonly entries = new Map<string, Entry>();
  private timer: NodeJS.Timeout | undefined;
  private loads = 0;
  private loadMs = 0;
  private changedAt = -1;

  constructor(private readonly o: { tickMs: number; freshMs: number; onError: (err: unknown) => void }) {}

  get stats(): HubStats {
    let subscribers = 0;
    for (const e of this.entries.values()) subscribers += e.subscribers.size;
    return { loads: this.loads, loadMs: this.loadMs, keys: this.entries.size, subscribers };
  }

  /** The data of `key`, loaded now unless a load less than `freshMs` old (or one in flight) can be shared. */
  async read(key: string, load: () => Promise<unknown>): Promise<unknown> {
    const e = this.entries.get(key);
    // Nobody has the page open: nothing to share, nothing kept.
    if (!e) return this.timed(load);
    // A load begun before the last change may miss it: wait for it, then load again.
    if (e.loading && e.startedAt > this.changedAt) return e.loading;
    if (e.loading) await e.loading.catch(() => undefined);
    if (Date.now() - e.loadedAt < this.o.freshMs && e.startedAt > this.changedAt) return e.data;
    return this.refresh(e);
  }

  /**
   * Says that something changed (an action ran): the next page request loads anew instead of
   * sharing data loaded before it, so the page an action redirects to shows its effect.
   */
  changed(): void {
    this.changedAt = performance.now();
  }

  /** Subscribes an open page to `key`; returns the unsubscribe function. */
  subscribe(key: string, load: () => Promise<unknown>, everyMs: number, send: (data: unknown) => void): () => void {
    const e = this.entry(key, load);
    const sub: Subscriber = { everyMs, sentAt: 0, send };
    e.subscribers.add(sub);
    this.timer ??= setInterval(() => this.tick(), this.o.tickMs);
    return () => {
      e.subscribers.delete(sub);
      if (e.subscribers.size === 0) this.entries.delete(key);
      if (this.entries.size === 0) this.close();
    };
  }

  /** Stops the poll. */
  close(): void {
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
  }

  private entry(key: string, load: () => Promise<unknown>): Entry {
    let e = this.entries.get(key);
    if (!e) {
      e = { load, subscribers: new Set(), data: undefined, loadedAt: 0, startedAt: -1, loading: undefined };
      this.entries.set(key, e);
    }
    return e;
  }

  private async timed(load: () => Promise<unknown>): Promise<unknown> {
    const started = Date.now();
    try {
      return await load();
    } finally {
      this.loads++;
      this.loadMs += Date.now() - started;
    }
  }

  private refresh(e: Entry): Promise<unknown> {
    e.startedAt = performance.now();
    e.loading = this.timed(e.load).then(
      (data) => {
        e.data = data;
        e.loadedAt = Date.now();
        e.loading = undefined;
        return data;
      },
      (err: unknown) => {
        e.loading = undefined;
        e.loadedAt = Date.now();
        throw err;
      },
    );
    return e.loading;
  }

  private tick(): void {
    const now = Date.now();
    for (const [key, e] of this.entries) {
      if (e.subscribers.size === 0) {
        this.entries.delete(key);
        continue;
      }
      if (e.loading) continue;
      const fastest = Math.min(...[...e.subscribers].map((s) => s.everyMs));
      const due = [...e.subscribers].filter((s) => now - s.sentAt >= s.everyMs);
      if (due.length === 0) continue;
      const send = () => {
        for (const s of due) {
          s.sentAt = Date.now();
          s.send(e.data);
        }
      };
      // One load per interval of the fastest subscriber, shared by all of them.
      if (e.data === undefined || now - e.loadedAt >= fastest - this.o.tickMs) this.refresh(e).then(send, this.o.onError);
      else send();
    }
    if (this.entries.size === 0) this.close();
  }
}
