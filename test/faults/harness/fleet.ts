import { fileURLToPath, pathToFileURL } from 'node:url';
import { startScript, type Proc } from '../../support/processes.js';

const SKEW_PRELOAD = pathToFileURL(fileURLToPath(new URL('../fixtures/skew-clock.mjs', import.meta.url))).href;

/** A process of the fleet, with what it was started with. */
export interface Member {
  proc: Proc;
  /** Its wall clock's offset from the real one (ms), 0 for none. */
  skewMs: number;
  /** A name for reports (`w3`). */
  name: string;
}

/**
 * Real nightshift processes of one scenario, started from a fixture script. Keeps every process
 * ever started (for their output when something fails) and ends them all, for sure, in `close()`.
 */
export class Fleet {
  private readonly members: Member[] = [];
  private started = 0;

  constructor(
    private readonly script: string,
    private readonly env: Record<string, string>,
  ) {}

  /** Starts one process; resolves once it printed `ready`. */
  async start(options: { env?: Record<string, string>; skewMs?: number; wait?: boolean } = {}): Promise<Member> {
    const skewMs = options.skewMs ?? 0;
    const env: Record<string, string> = { ...this.env, ...options.env };
    if (skewMs !== 0) {
      env.NS_CLOCK_SKEW_MS = String(skewMs);
      env.NODE_OPTIONS = `${process.env.NODE_OPTIONS ?? ''} --import ${SKEW_PRELOAD}`.trim();
    }
    const member: Member = { proc: startScript(this.script, env), skewMs, name: `p${++this.started}` };
    this.members.push(member);
    if (options.wait !== false) await member.proc.waitForLine('ready');
    return member;
  }

  /** Processes that have not exited. */
  alive(): Member[] {
    return this.members.filter((m) => m.proc.child.exitCode === null && m.proc.child.signalCode === null);
  }

  /** Every process started, alive or not. */
  all(): readonly Member[] {
    return this.members;
  }

  /** The member with this pid. */
  byPid(pid: number): Member | undefined {
    return this.members.find((m) => m.proc.pid === pid);
  }

  /** Sends SIGTERM to every live process and waits for them to exit (at most `ms`, then SIGKILL). */
  async stopAll(ms = 60_000): Promise<{ pid: number; code: number | null; signal: NodeJS.Signals | null }[]> {
    const live = this.alive();
    for (const m of live) {
      m.proc.kill('SIGCONT');
      m.proc.kill('SIGTERM');
    }
    const timer = setTimeout(() => live.forEach((m) => m.proc.kill('SIGKILL')), ms);
    try {
      return await Promise.all(live.map(async (m) => ({ pid: m.proc.pid, ...(await m.proc.exited) })));
    } finally {
      clearTimeout(timer);
    }
  }

  /** Kills whatever is still running (a stopped one is continued first, so it can die). */
  async close(): Promise<void> {
    const live = this.alive();
    for (const m of live) {
      m.proc.kill('SIGCONT');
      m.proc.kill('SIGKILL');
    }
    await Promise.all(live.map((m) => m.proc.exited));
  }

  /** The tail of every process's output, for a failure report. */
  outputs(maxPerProcess = 2_000): string {
    return this.members.map((m) => `--- ${m.name} (pid ${m.proc.pid}, skew ${m.skewMs} ms)\n${m.proc.output().slice(-maxPerProcess)}`).join('\n');
  }
}
