import { createLogger, type Logger, type LoggerOptions } from '../telemetry/logger.js';
import { toJson } from './output.js';
import { StopRequests } from './stop-requests.js';

/** Where the CLI writes: anything with `write(text)` — `process.stdout`, a test's buffer. */
export interface TextSink {
  write(text: string): unknown;
  /** Its file descriptor, if it has one (`process.stdout.fd`): `dev` hands it to its app as is. */
  readonly fd?: number;
}

/** How to start this CLI again in a child process (`dev` runs its app so). */
export interface CliSelf {
  command: string;
  args: string[];
}

/**
 * What one run of the CLI is given instead of the process's globals: it writes only to `out` and
 * `err`, reads only `env` and `cwd`, and never exits the process — `runCli` resolves with
 * the exit code, and the binary (main.ts) is the one place that touches `process`.
 */
export interface CliIo {
  /** Results: tables, JSON, and the logs of `worker` and `dev`. */
  out: TextSink;
  /** Errors (`error NS_…: message`), progress and notices. */
  err: TextSink;
  /**
   * The environment the CLI reads: `DATABASE_URL`, `NIGHTSHIFT_ROLES`, `NIGHTSHIFT_LOG_LEVEL`
   * (and what `dev` passes to its app). Default `process.env`. The config file and the library
   * read `process.env` themselves (`REDIS_URL`, `DATABASE_LISTEN_URL`, a job's `requiredEnv`),
   * as they do in any program that embeds nightshift.
   */
  env?: Readonly<Record<string, string | undefined>>;
  /** Where the config is looked for and `dev` keeps `.nightshift/`. Default `process.cwd()`. */
  cwd?: string;
  /** Stop requests for `worker` and `dev`. Default: none arrive (they run until the process ends). */
  stops?: StopRequests;
  /** How `dev` starts its app. Default: this CLI's entry beside this file, with node (and tsx from sources). */
  self?: CliSelf;
  /**
   * Calls `listener` when the process that started this one goes away (the binary: its IPC channel
   * closes); returns a function that stops listening. The app `dev` runs stops then. Default: never.
   */
  onParentGone?: (listener: () => void) => () => void;
  /**
   * The logger of a command (unless the config brings its own). Default: JSON lines to `out`, or to
   * the `destination` the command names (admin commands log to `err`, so `--json` stays parseable).
   */
  logger?: (options: LoggerOptions) => Logger;
}

/** What a command works with during one run: the resolved {@link CliIo}, ways to print, and the exit code it may set. */
export interface CliRun {
  readonly out: TextSink;
  readonly err: TextSink;
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly cwd: string;
  readonly stops: StopRequests;
  readonly self: CliSelf;
  /** Makes a command's logger (a worker's and dev's log to `out`, an admin command's to `err`). */
  logger(options: LoggerOptions): Logger;
  /** See {@link CliIo.onParentGone}. */
  onParentGone(listener: () => void): () => void;
  /** The exit code when the command ends without an error (0 unless it says otherwise, as `budget` over budget). */
  exitCode: number;
  /** Writes a line to `out`. */
  line(text: string): void;
  /** Writes JSON to `out` (Dates as ISO strings, bigints as strings). */
  json(value: unknown): void;
  /** Writes a line to `err` (progress, notices). */
  note(text: string): void;
}

/** The run of one CLI invocation, with the defaults filled in. */
export function cliRun(io: CliIo, defaultSelf: () => CliSelf): CliRun {
  const { out, err } = io;
  return {
    out,
    err,
    env: io.env ?? process.env,
    cwd: io.cwd ?? process.cwd(),
    stops: io.stops ?? new StopRequests(),
    self: io.self ?? defaultSelf(),
    logger: io.logger ?? ((options) => createLogger({ destination: out, ...options })),
    onParentGone: io.onParentGone ?? (() => () => undefined),
    exitCode: 0,
    line: (text) => void out.write(`${text}\n`),
    json: (value) => void out.write(`${toJson(value)}\n`),
    note: (text) => void err.write(`${text}\n`),
  };
}
