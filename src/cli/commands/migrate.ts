import type { Command } from 'commander';
import type { CliRun } from '../cli-io.js';
import { clientCommand } from '../client-command.js';

/** `nightshift migrate`: creates or upgrades the schema and registers the config's kinds. */
export function registerMigrate(program: Command, run: CliRun): void {
  clientCommand(program.command('migrate').description('create or upgrade the database schema (safe to run from many replicas at once)'), run, {
    fetch: (ns) => ns.migrate(),
    human: (r) =>
      r.applied.length === 0
        ? [`schema "${r.schema}" is up to date (migration ${r.to})`]
        : [`schema "${r.schema}" migrated from ${r.from} to ${r.to}: ${r.applied.map((m) => `${m.version} ${m.name}`).join(', ')}`],
  });
}
