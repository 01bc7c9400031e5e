import type pg from 'pg';
import type { EmbeddedPostgresHandle } from '../../../src/dev/embedded-postgres.js';
import type { Member } from './fleet.js';
import type { Random } from './random.js';
import type { FaultKind, FaultRecord } from './recorder.js';

/** The pid of the nightshift process a backend serves, from its application_name (`nightshift:<host>:<pid>[:listener]`). */
export function ownerPid(applicationName: string): number | null {
  const m = /^nightshift:.*:(\d+)(:listener)?$/.exec(applicationName);
  return m ? Number(m[1]) : null;
}

/**
 * Injects real faults — on loopback only, into processes and a server this run started — and
 * logs each with its time and target, so the checker can tell which executions a fault could
 * have hit. Every action is bounded: nothing here waits for longer than it says.
 */
export class FaultInjector {
  readonly log: FaultRecord[] = [];

  constructor(
    private readonly admin: pg.Pool,
    private readonly random: Random,
  ) {}

  /** Records a fault that happened outside the injector's own actions (a rollback, a skewed clock). */
  record(kind: FaultKind, targetPid: number | null, detail: string, startedAt = Date.now(), endedAt = startedAt): void {
    this.log.push({ kind, targetPid, backendPid: null, startedAt, endedAt, detail });
  }

  /** Faults by kind. */
  counts(): Partial<Record<FaultKind, number>> {
    const out: Partial<Record<FaultKind, number>> = {};
    for (const f of this.log) out[f.kind] = (out[f.kind] ?? 0) + 1;
    return out;
  }

  /** SIGKILLs a process and waits for it to be gone. */
  async kill(m: Member): Promise<void> {
    const at = Date.now();
    m.proc.kill('SIGCONT');
    m.proc.kill('SIGKILL');
    await m.proc.exited;
    this.log.push({ kind: 'sigkill', targetPid: m.proc.pid, backendPid: null, startedAt: at, endedAt: Date.now(), detail: m.name });
  }

  /** SIGSTOPs a process; the returned function SIGCONTs it and closes the fault's interval. */
  pause(m: Member): () => void {
    const at = Date.now();
    m.proc.kill('SIGSTOP');
    const fault: FaultRecord = { kind: 'sigstop', targetPid: m.proc.pid, backendPid: null, startedAt: at, endedAt: Number.POSITIVE_INFINITY, detail: m.name };
    this.log.push(fault);
    let resumed = false;
    return () => {
      if (resumed) return;
      resumed = true;
      m.proc.kill('SIGCONT');
      fault.endedAt = Date.now();
    };
  }

  /** Sends SIGTERM (the fault ends when the process exits). */
  async terminate(m: Member): Promise<{ code: number | null; signal: NodeJS.Signals | null; ms: number }> {
    const at = Date.now();
    m.proc.kill('SIGTERM');
    const exit = await m.proc.exited;
    const end = Date.now();
    this.log.push({ kind: 'sigterm', targetPid: m.proc.pid, backendPid: null, startedAt: at, endedAt: end, detail: m.name });
    return { ...exit, ms: end - at };
  }

  /**
   * Terminates up to `count` random backends of nightshift processes (`pids`: only those of these
   * processes; `listenerOnly`: only LISTEN connections; `newestOnly`: only the newest connection
   * of each name). Returns how many were terminated.
   */
  async terminateBackends(options: { count: number; pids?: ReadonlySet<number>; listenerOnly?: boolean; newestOnly?: boolean }): Promise<number> {
    const { rows } = await this.admin.query<{ pid: number; application_name: string; newest: boolean }>(
      `SELECT pid, application_name,
              backend_start = max(backend_start) OVER (PARTITION BY application_name) AS newest
       FROM pg_stat_activity
       WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name LIKE 'nightshift:%'`,
    );
    let candidates = rows.filter((r) => {
      const owner = ownerPid(r.application_name);
      if (owner === null || (options.pids && !options.pids.has(owner))) return false;
      // A silently cut connection leaves its server side behind: `newestOnly` skips such leftovers.
      if (options.newestOnly && !r.newest) return false;
      return !options.listenerOnly || r.application_name.endsWith(':listener');
    });
    let done = 0;
    while (done < options.count && candidates.length > 0) {
      const victim = this.random.pick(candidates);
      candidates = candidates.filter((c) => c !== victim);
      const at = Date.now();
      const { rows: ok } = await this.admin.query<{ ok: boolean }>('SELECT pg_terminate_backend($1) AS ok', [victim.pid]);
      if (!ok[0]?.ok) continue;
      done++;
      this.log.push({
        kind: 'backend-terminated',
        targetPid: ownerPid(victim.application_name),
        backendPid: victim.pid,
        startedAt: at,
        endedAt: Date.now(),
        detail: victim.application_name.endsWith(':listener') ? 'listener' : 'pool',
      });
    }
    return done;
  }

  /** Stops the whole server (fast shutdown: every session ends) and starts it again; returns the downtime. */
  async restartPostgres(server: EmbeddedPostgresHandle, downMs = 0): Promise<number> {
    const at = Date.now();
    await server.stop();
    if (downMs > 0) await new Promise((r) => setTimeout(r, downMs));
    await server.restart();
    const end = Date.now();
    this.log.push({ kind: 'pg-restart', targetPid: null, backendPid: null, startedAt: at, endedAt: end, detail: `down ${end - at} ms` });
    return end - at;
  }

  /** Closes open intervals (a pause never resumed) at `now`, before the log is written. */
  seal(now = Date.now()): FaultRecord[] {
    for (const f of this.log) if (!Number.isFinite(f.endedAt)) f.endedAt = now;
    return this.log;
  }
}

/**
 * Runs timed actions in order, each at its offset from the start (late ones run at once, never
 * two at a time). Bounded: resolves once the last action finished.
 */
export async function runTimeline(actions: readonly { atMs: number; run: () => Promise<unknown> }[], onError: (err: unknown) => void): Promise<void> {
  const start = Date.now();
  for (const a of [...actions].sort((x, y) => x.atMs - y.atMs)) {
    const wait = start + a.atMs - Date.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    try {
      await a.run();
    } catch (err) {
      onError(err);
    }
  }
}
