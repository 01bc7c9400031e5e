import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { afterEach } from 'vitest';

const SCRIPT = fileURLToPath(new URL('./fixtures/consumer-process.ts', import.meta.url));

/** A consumer process started by a test: its event lines, and ways to wait on it and kill it. */
export interface ConsumerProcess {
  readonly child: ChildProcess;
  readonly pid: number;
  /** Events printed by the process (JSON lines), in order. */
  readonly lines: { type: string; [k: string]: unknown }[];
  /** Resolves when the process has started its runner. */
  readonly ready: Promise<void>;
  /** Resolves with the exit code (or signal) when the process ends. */
  readonly exited: Promise<number | string>;
  /** Everything the process wrote, for failure messages. */
  output(): string;
  /** Whether the process is still running. */
  alive(): boolean;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

/** Starts consumer processes with the given environment; kills whatever is left after each test. */
export function useConsumerProcesses(base: () => Record<string, string>) {
  const started: ConsumerProcess[] = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((p) => p.kill('SIGKILL')));
  });
  return (env: Record<string, string>): ConsumerProcess => {
    const child = spawn(process.execPath, ['--import', 'tsx', SCRIPT], {
      env: { ...process.env, ...base(), ...env, NODE_OPTIONS: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const lines: ConsumerProcess['lines'] = [];
    let text = '';
    let buffer = '';
    let onReady!: () => void;
    let onFail!: (e: Error) => void;
    const ready = new Promise<void>((resolve, reject) => {
      onReady = resolve;
      onFail = reject;
    });
    child.stdout!.on('data', (chunk: Buffer) => {
      text += chunk.toString();
      buffer += chunk.toString();
      let nl: number;
      while ((nl = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, nl);
        buffer = buffer.slice(nl + 1);
        try {
          const parsed = JSON.parse(line) as ConsumerProcess['lines'][number];
          lines.push(parsed);
          if (parsed.type === 'ready') onReady();
        } catch {
          // not an event line
        }
      }
    });
    child.stderr!.on('data', (chunk: Buffer) => (text += chunk.toString()));
    const exited = new Promise<number | string>((resolve) => {
      child.on('exit', (code, signal) => {
        onFail(new Error(`consumer process exited (${code ?? signal}) before it was ready:\n${text.slice(-3000)}`));
        resolve(code ?? signal ?? 'unknown');
      });
    });
    const p: ConsumerProcess = {
      child,
      pid: child.pid!,
      lines,
      ready,
      exited,
      output: () => text,
      alive: () => child.exitCode === null && child.signalCode === null,
      async kill(signal = 'SIGKILL') {
        if (!p.alive()) return;
        child.kill(signal);
        await exited;
      },
    };
    started.push(p);
    return p;
  };
}
