#!/usr/bin/env node
import { Command, CommanderError } from 'commander';
import { isNightshiftError } from '../errors.js';
import { elideDataUrls } from '../telemetry/data-urls.js';
import { nightshiftVersion } from '../runtime/version.js';
import { registerDaemons } from './commands/daemons.js';
import { registerDev } from './commands/dev.js';
import { registerEnqueue } from './commands/enqueue.js';
import { registerJobs } from './commands/jobs.js';
import { registerMigrate } from './commands/migrate.js';
import { registerPipelines } from './commands/pipelines.js';
import { registerQueues } from './commands/queues.js';
import { registerSchedules } from './commands/schedules.js';
import { registerStatus } from './commands/status.js';
import { registerStreams } from './commands/streams.js';
import { registerWorker } from './commands/worker.js';
import { EXIT, exitCodeFor } from './exit-codes.js';

/** Builds the `nightshift` program: one file per command (group) under commands/. */
export function buildProgram(): Command {
  const program = new Command('nightshift')
    .description('background work on PostgreSQL and Redis Streams')
    .version(nightshiftVersion())
    .option('--database-url <url>', 'PostgreSQL URL (default: DATABASE_URL)')
    .option('--config <path>', 'config file (default: nightshift.config.ts in the working directory)')
    .option('--schema <name>', "nightshift's schema (default: the config's, else nightshift)")
    .option('--actor <name>', 'who you are, for the audit log (default: user@host)')
    .showHelpAfterError('(run with --help for usage)')
    .exitOverride();
  registerMigrate(program);
  registerWorker(program);
  registerEnqueue(program);
  registerJobs(program);
  registerQueues(program);
  registerSchedules(program);
  registerStatus(program);
  registerDaemons(program);
  registerStreams(program);
  registerPipelines(program);
  registerDev(program);
  for (const c of program.commands) {
    c.exitOverride();
    for (const sub of c.commands) sub.exitOverride();
  }
  return program;
}

/** Runs the CLI; resolves with the exit code. */
export async function main(argv: string[]): Promise<number> {
  const program = buildProgram();
  try {
    await program.parseAsync(argv, { from: 'user' });
    return typeof process.exitCode === 'number' ? process.exitCode : EXIT.ok;
  } catch (err) {
    if (err instanceof CommanderError) {
      // --help and --version end with code 0; anything else commander rejects is a usage error.
      return err.exitCode === 0 ? EXIT.ok : EXIT.usage;
    }
    if (isNightshiftError(err)) process.stderr.write(`error ${err.code}: ${err.message}\n`);
    else process.stderr.write(`error: ${elideDataUrls(err instanceof Error ? (err.stack ?? err.message) : String(err))}\n`);
    return exitCodeFor(err);
  }
}

const code = await main(process.argv.slice(2));
// Let stdout drain, then exit with the code (a worker never gets here: it waits for a signal).
process.exitCode = code;
