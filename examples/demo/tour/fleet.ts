// The tour's fleet: every system runs as real child processes (`node --import tsx <script>`), the
// way a deployment runs them, so what the dashboard shows is several processes in each schema.
// A child's output is kept (shown when a step fails); stopping sends SIGTERM and waits for the
// drain, then SIGKILL for one that hangs.
import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** The repository's root: scripts and configs are named from here. */
export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
/** The nightshift CLI, run from its sources (the same as `npx nightshift` after a build). */
export const CLI = 'src/cli/main.ts';

/** One running child of the fleet. */
export interface Child {
  name: string;
  pid: number;
  output(): string;
  /** Resolves once the child has printed `marker`; rejects if it exits first or after `timeoutMs`. */
  waitForLine(marker: string, timeoutMs?: number): Promise<void>;
  exited: Promise<number | null>;
  stop(): Promise<void>;
}

/** Runs a condition until it is truthy (polling; bounded, never a fixed sleep). The bound is generous: a loaded machine starts eight processes slowly. */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs = 150_000, everyMs = 150): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, everyMs));
  }
}

/** The fleet: starts children and stops them all. */
export class Fleet {
  readonly children: Child[] = [];
  /** Children that have not exited yet (a pid is never signalled after its exit: it may be reused). */
  private readonly live = new Set<number>();

  constructor() {
    // The children have process groups of their own, so nothing else ends them: should the tour
    // exit without stopping them (a crash), they are killed on the way out rather than left running.
    process.on('exit', () => {
      for (const pid of this.live) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // already gone
        }
      }
    });
  }

  /** Starts `node --import tsx <script> ...args` with the tour's environment plus `env`. */
  start(name: string, script: string, env: Record<string, string>, args: string[] = []): Child {
    const child: ChildProcess = spawn(process.execPath, ['--import', 'tsx', join(ROOT, script), ...args], {
      cwd: ROOT,
      env: { ...process.env, NIGHTSHIFT_LOG_LEVEL: 'warn', ...env },
      stdio: ['ignore', 'pipe', 'pipe'],
      // A group of its own: Ctrl-C reaches the tour only, which stops the children in order
      // (before PostgreSQL), instead of every process at once.
      detached: true,
    });
    let out = '';
    child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr!.on('data', (c: Buffer) => (out += c.toString()));
    const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
    let done = false;
    this.live.add(child.pid!);
    void exited.then(() => {
      done = true;
      this.live.delete(child.pid!);
    });
    const c: Child = {
      name,
      pid: child.pid!,
      output: () => out,
      waitForLine: async (marker, timeoutMs = 150_000) => {
        await waitFor(
          `${name} to print "${marker}"`,
          () => {
            if (out.includes(marker)) return true;
            if (done) throw new Error(`${name} exited before printing "${marker}":\n${out.slice(-2_000)}`);
            return false;
          },
          timeoutMs,
        );
      },
      exited,
      stop: async () => {
        if (done) return;
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
        await exited;
        clearTimeout(timer);
      },
    };
    this.children.push(c);
    return c;
  }

  /** Runs a CLI command to its end: its exit code and output. */
  async run(name: string, script: string, env: Record<string, string>, args: string[] = []): Promise<{ code: number | null; output: string }> {
    const c = this.start(name, script, env, args);
    const code = await c.exited;
    this.children.splice(this.children.indexOf(c), 1);
    return { code, output: c.output() };
  }

  /** Stops every child still running, in parallel (each drains on SIGTERM). */
  async stopAll(): Promise<void> {
    await Promise.all(this.children.map((c) => c.stop()));
  }
}
