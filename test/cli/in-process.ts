// The `nightshift` CLI run in the test's own process: runCli with buffers for stdout and stderr,
// the same result shape as the spawned binary (test/support/cli.ts), a few hundred milliseconds a
// call instead of a Node process's start. Process behaviour (signals, exit, the bin file) stays
// with the real binary: test/cli/binary.test.ts.
import { runCli } from '../../src/cli/program.js';
import { StopRequests } from '../../src/cli/stop-requests.js';
import { CLI_APP, type CliResult } from '../support/cli.js';

/** What runCli reads from the env it is given. The config file and the library read process.env. */
const CLI_READS = new Set(['DATABASE_URL', 'NIGHTSHIFT_ROLES', 'NIGHTSHIFT_LOG_LEVEL']);

export interface InProcessOptions {
  /** Variables for the CLI, over process.env (undefined: unset). Only those the CLI reads may differ from process.env. */
  env?: Record<string, string | undefined>;
  /** Working directory (default: the CLI tests' app). */
  cwd?: string;
}

function cliEnv(extra: Record<string, string | undefined> = {}): Record<string, string | undefined> {
  for (const [k, v] of Object.entries(extra)) {
    // A config reading NS_SCHEMA, the runtime reading REDIS_URL or a job's requiredEnv see
    // process.env: a different value here would be silently ignored, so refuse it.
    if (!CLI_READS.has(k) && v !== process.env[k]) {
      throw new Error(`${k}=${String(v)} differs from process.env: the config and the library read process.env. Set it there (withProcessEnv), or spawn the binary (cli()).`);
    }
  }
  const env: Record<string, string | undefined> = { ...process.env, NIGHTSHIFT_LOG_LEVEL: 'warn', ...extra };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
  return env;
}

/** A buffer the CLI writes to, with a way to wait for a line. */
function sink() {
  let text = '';
  const waiters: { marker: string; resolve: () => void }[] = [];
  return {
    write(chunk: string) {
      text += chunk;
      for (const w of [...waiters]) {
        if (text.includes(w.marker)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve();
        }
      }
    },
    text: () => text,
    waitFor(marker: string, ended: Promise<unknown>): Promise<void> {
      if (text.includes(marker)) return Promise.resolve();
      return new Promise((resolve, reject) => {
        waiters.push({ marker, resolve });
        void ended.then(() => reject(new Error(`the command ended before printing "${marker}":\n${text}`)));
      });
    },
  };
}

/** Runs `nightshift <args>` in this process and collects its output and exit code. */
export async function cliInProcess(args: string[], options: InProcessOptions = {}): Promise<CliResult> {
  const out = sink();
  const err = sink();
  const code = await runCli(args, { out, err, env: cliEnv(options.env), cwd: options.cwd ?? CLI_APP });
  return { code, stdout: out.text(), stderr: err.text() };
}

/** A command that runs until stopped (`worker`, `dev`), started in this process. */
export interface InProcessRun {
  /** stdout and stderr so far. */
  output(): string;
  /** Resolves when the command prints a line containing `marker` (rejects if it ends first). */
  waitForLine(marker: string): Promise<void>;
  /** Asks it to stop, as the binary does on SIGTERM (a second call: at once). */
  stop(reason?: string): void;
  /** Its result once it ended. */
  ended: Promise<CliResult>;
  /** For a `finally`: asks it to stop unless that was asked already, and waits for the end. */
  close(): Promise<CliResult>;
}

/** Starts a long-running command in this process; stop it with `stop()` and await `ended`. */
export function startInProcess(args: string[], options: InProcessOptions = {}): InProcessRun {
  const out = sink();
  const err = sink();
  const both = sink();
  const stops = new StopRequests();
  const tee = (s: ReturnType<typeof sink>) => ({ write: (chunk: string) => (s.write(chunk), both.write(chunk)) });
  const ended = runCli(args, { out: tee(out), err: tee(err), env: cliEnv(options.env), cwd: options.cwd ?? CLI_APP, stops }).then((code) => ({
    code,
    stdout: out.text(),
    stderr: err.text(),
  }));
  return {
    output: both.text,
    waitForLine: (marker) => both.waitFor(marker, ended),
    stop: (reason = 'SIGTERM') => stops.request(reason),
    ended,
    close: () => {
      if (stops.requested === 0) stops.request('SIGTERM');
      return ended;
    },
  };
}

/**
 * Runs `fn` with process.env changed (undefined: unset), then restores it. For what the config
 * file or the library reads (NS_SCHEMA, REDIS_URL). Not for concurrent tests: process.env is one.
 */
export async function withProcessEnv<T>(vars: Record<string, string | undefined>, fn: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  const set = (values: Record<string, string | undefined>) => {
    for (const [k, v] of Object.entries(values)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  };
  set(vars);
  try {
    return await fn();
  } finally {
    set(saved);
  }
}
