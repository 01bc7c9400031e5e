import { spawn, type ChildProcess } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');

/** A real child process running a TypeScript script (through tsx), with its output kept. */
export interface Proc {
  child: ChildProcess;
  pid: number;
  output: () => string;
  /** Resolves when the process prints a line containing `marker`. */
  waitForLine(marker: string): Promise<void>;
  /** Resolves with the exit code (or signal) once it exits. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  kill(signal?: NodeJS.Signals): void;
}

/** Starts `node --import tsx <script> ...args` from the repository root with extra env. */
export function startScript(script: string, env: Record<string, string>, args: string[] = [], cwd = ROOT): Proc {
  const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, script), ...args], {
    cwd,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const lineWaiters: { marker: string; resolve: () => void }[] = [];
  const onData = (chunk: Buffer) => {
    out += chunk.toString();
    for (const w of [...lineWaiters]) {
      if (out.includes(w.marker)) {
        lineWaiters.splice(lineWaiters.indexOf(w), 1);
        w.resolve();
      }
    }
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
  return {
    child,
    pid: child.pid!,
    output: () => out,
    waitForLine(marker: string) {
      if (out.includes(marker)) return Promise.resolve();
      return new Promise<void>((resolve, reject) => {
        lineWaiters.push({ marker, resolve });
        void exited.then(({ code, signal }) => reject(new Error(`process exited (${code ?? signal}) before printing "${marker}":\n${out}`)));
      });
    },
    exited,
    kill(signal: NodeJS.Signals = 'SIGKILL') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
    },
  };
}
