#!/usr/bin/env node
// The `nightshift` binary: the one place the CLI touches the process. Everything else is
// runCli (program.ts), which writes to the streams it is given and resolves with an exit code.
import { createLogger } from '../telemetry/logger.js';
import { runCli } from './program.js';
import { StopRequests } from './stop-requests.js';

const stops = new StopRequests({
  // Only a command that runs until stopped (worker, dev) listens: a short one keeps Node's
  // default, so a Ctrl-C ends it at once.
  onFirstListener: () => {
    process.on('SIGINT', () => stops.request('SIGINT'));
    process.on('SIGTERM', () => stops.request('SIGTERM'));
  },
});

const code = await runCli(process.argv.slice(2), {
  out: process.stdout,
  err: process.stderr,
  env: process.env,
  cwd: process.cwd(),
  stops,
  // dev starts its app the way this process was started (node flags included).
  self: { command: process.execPath, args: [...process.execArgv, process.argv[1]!] },
  onParentGone: (listener) => {
    if (!process.channel) return () => undefined;
    process.once('disconnect', listener);
    return () => void process.off('disconnect', listener);
  },
  // Node's stdout through pino's own writer (and readable lines on a terminal), as a library user gets.
  logger: (options) => createLogger(options),
});
if (stops.listened) {
  // A worker or dev that stopped: exit now, even after a second signal while the first stop
  // still drains, and whatever a library left open.
  process.exit(code);
}
// A short command: let stdout drain, then exit with the code.
process.exitCode = code;
