import { fork, type ChildProcess } from 'node:child_process';
import type { ChildCommand, ChildInit, ChildReply } from './protocol.js';

const live = new Set<ChildProcess>();

/** Kills every child still running (used on timeouts and on exit). */
export function killAllChildren(): void {
  for (const c of live) c.kill('SIGKILL');
  live.clear();
}

/** A benchmark child process driven over IPC. */
export class Child {
  private nextId = 1;
  private readonly waiting = new Map<number, { resolve(v: unknown): void; reject(e: Error): void }>();
  private readonly exited: Promise<number | null>;

  private constructor(
    private readonly proc: ChildProcess,
    readonly label: string,
  ) {
    this.exited = new Promise((resolve) => proc.once('exit', (code) => resolve(code)));
    proc.on('message', (msg: ChildReply) => {
      if (msg.type !== 'reply') return;
      const w = this.waiting.get(msg.id);
      if (!w) return;
      this.waiting.delete(msg.id);
      if (msg.ok) w.resolve(msg.result);
      else w.reject(new Error(`${label}: ${msg.error}`));
    });
    void this.exited.then((code) => {
      live.delete(proc);
      for (const w of this.waiting.values()) w.reject(new Error(`${label} exited (code ${code})`));
      this.waiting.clear();
    });
  }

  /** Starts the bundled child script and waits until it reports ready (bounded by `timeoutMs`). */
  static async start(script: string, init: ChildInit, timeoutMs: number, execArgv: string[] = []): Promise<Child> {
    const proc = fork(script, [], { execArgv, stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
    live.add(proc);
    const label = `${init.system} ${init.role}${init.concurrency ? ` c${init.concurrency}` : ''} (pid ${proc.pid})`;
    const child = new Child(proc, label);
    const ready = new Promise<void>((resolve, reject) => {
      proc.on('message', (m: ChildReply) => m.type === 'ready' && resolve());
      void child.exited.then((code) => reject(new Error(`${label} exited before it was ready (code ${code})`)));
    });
    proc.send(init);
    try {
      await withTimeout(ready, timeoutMs, `${label} start`);
    } catch (err) {
      child.kill();
      throw err;
    }
    return child;
  }

  get pid(): number | undefined {
    return this.proc.pid;
  }

  /** Sends a command and waits for its reply (bounded by `timeoutMs`). */
  request<T>(command: ChildCommand, timeoutMs: number): Promise<T> {
    const id = this.nextId++;
    const reply = new Promise<T>((resolve, reject) => this.waiting.set(id, { resolve: resolve as (v: unknown) => void, reject }));
    this.proc.send({ type: 'request', id, command });
    return withTimeout(reply, timeoutMs, `${this.label} ${command.op}`);
  }

  /** Asks the child to stop, and kills it if it has not exited within `timeoutMs`. */
  async stop<T>(timeoutMs: number): Promise<T | undefined> {
    let result: T | undefined;
    try {
      result = await this.request<T>({ op: 'stop' }, timeoutMs);
      await withTimeout(this.exited, 5_000, `${this.label} exit`);
    } catch {
      this.kill();
    }
    return result;
  }

  kill(): void {
    this.proc.kill('SIGKILL');
  }
}

/** Rejects with a clear message when `p` takes longer than `ms`. */
export function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`timed out after ${Math.round(ms / 1000)} s: ${what}`)), ms);
  });
  return Promise.race([p, timeout]).finally(() => clearTimeout(timer));
}
