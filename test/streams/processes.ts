import { afterEach } from 'vitest';
import { startScript, type Proc } from '../support/processes.js';

/** A consumer process (test/streams/fixtures/consumer-process.ts) started by a test. */
export interface ConsumerProcess {
  readonly proc: Proc;
  readonly pid: number;
  /** Resolves when the process has started its runner. */
  readonly ready: Promise<void>;
  /** The events the process printed (JSON lines), in order. */
  lines(): { type: string; [k: string]: unknown }[];
  alive(): boolean;
  /** Kills the process and waits for it to exit; resolves with its exit code (or signal). */
  kill(signal?: NodeJS.Signals): Promise<number | string>;
}

/** Starts consumer processes with the given environment; kills whatever is left after each test. */
export function useConsumerProcesses(base: () => Record<string, string>) {
  const started: ConsumerProcess[] = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((p) => p.kill('SIGKILL')));
  });
  return (env: Record<string, string>): ConsumerProcess => {
    const proc = startScript('test/streams/fixtures/consumer-process.ts', { ...base(), ...env });
    const p: ConsumerProcess = {
      proc,
      pid: proc.pid,
      ready: proc.waitForLine('"type":"ready"'),
      lines: () =>
        proc
          .output()
          .split('\n')
          .flatMap((l) => {
            try {
              return l.startsWith('{') ? [JSON.parse(l) as { type: string }] : [];
            } catch {
              return [];
            }
          }),
      alive: () => proc.child.exitCode === null && proc.child.signalCode === null,
      async kill(signal = 'SIGKILL') {
        proc.kill(signal);
        const { code, signal: s } = await proc.exited;
        return code ?? s ?? 'unknown';
      },
    };
    started.push(p);
    return p;
  };
}
