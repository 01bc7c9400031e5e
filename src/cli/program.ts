import { fileURLToPath } from 'node:url';
import { Command, CommanderError } from 'commander';
import { isNightshiftError } from '../errors.js';
import { nightshiftVersion } from '../runtime/version.js';
import { elideDataUrls } from '../telemetry/data-urls.js';
import { cliRun, type CliIo, type CliRun, type CliSelf } from './cli-io.js';
import { registerAlerts } from './commands/alerts.js';
import { registerChecks } from './commands/checks.js';
import { registerDaemons } from './commands/daemons.js';
import { registerDashboard } from './commands/dashboard.js';
import { registerDev } from './commands/dev.js';
import { registerEnqueue } from './commands/enqueue.js';
import { registerJobs } from './commands/jobs.js';
import { registerLimits } from './commands/limits.js';
import { registerMigrate } from './commands/migrate.js';
import { registerPipelines } from './commands/pipelines.js';
import { registerQueues } from './commands/queues.js';
import { registerSchedules } from './commands/schedules.js';
import { registerStatus } from './commands/status.js';
import { registerStreams } from './commands/streams.js';
import { registerWorker } from './commands/worker.js';
import { EXIT, exitCodeFor } from './exit-codes.js';

/** The CLI's entry beside this file: main.ts through tsx when running from the sources, else main.js. */
function defaultSelf(): CliSelf {
  const fromSources = import.meta.url.endsWith('.ts');
  const main = fileURLToPath(new URL(fromSources ? './main.ts' : './main.js', import.meta.url));
  return { command: process.execPath, args: fromSources ? ['--import', 'tsx', main] : [main] };
}

function programFor(run: CliRun): Command {
  const program = new Command('nightshift')
    .description('background work on PostgreSQL and Redis Streams')
    // Set before the commands are added: each copies them from its parent.
    .configureOutput({ writeOut: (text) => void run.out.write(text), writeErr: (text) => void run.err.write(text) })
    .exitOverride()
    .showHelpAfterError('(run with --help for usage)')
    .version(nightshiftVersion())
    .option('--database-url <url>', 'PostgreSQL URL (default: DATABASE_URL)')
    .option('--config <path>', 'config file (default: nightshift.config.ts in the working directory)')
    .option('--schema <name>', "nightshift's schema (default: the config's, else nightshift)")
    .option('--actor <name>', 'who you are, for the audit log (default: user@host)');
  registerMigrate(program, run);
  registerWorker(program, run);
  registerEnqueue(program, run);
  registerJobs(program, run);
  registerQueues(program, run);
  registerLimits(program, run);
  registerSchedules(program, run);
  registerStatus(program, run);
  registerDaemons(program, run);
  registerStreams(program, run);
  registerAlerts(program, run);
  registerChecks(program, run);
  registerPipelines(program, run);
  registerDashboard(program, run);
  registerDev(program, run);
  return program;
}

/**
 * Builds the `nightshift` program (one file per command group under commands/) writing to the
 * given streams. {@link runCli} runs it and gives the exit code; this is for what only needs the
 * commands (their help, their names).
 */
export function buildProgram(io: CliIo): Command {
  return programFor(cliRun(io, defaultSelf));
}

/**
 * Runs the CLI on `argv` (the arguments after `nightshift`) and resolves with its exit code: 0
 * success, 1 a failed operation, 2 a usage or configuration error (docs/cli.md). It writes only
 * to `io.out` and `io.err` and never exits the process, so it runs in a test as it runs in the
 * binary. `worker` and `dev` resolve once stopped through `io.stops`.
 */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  const run = cliRun(io, defaultSelf);
  try {
    await programFor(run).parseAsync([...argv], { from: 'user' });
    return run.exitCode;
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version end with code 0; anything else commander rejects is a usage error.
      return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    if (isNightshiftError(err)) run.note(`error ${err.code}: ${err.message}`);
    else run.note(`error: ${elideDataUrls(err instanceof Error ? (err.stack ?? err.message) : String(err))}`);
    return exitCodeFor(err);
  }
}
