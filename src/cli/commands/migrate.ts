import type { Command } from 'commander';
import { cliContext, withClient, type GlobalOptions } from '../context.js';
import { json, out } from '../output.js';

/** `nightshift migrate`: creates or upgrades the schema and registers the config's kinds. */
export function registerMigrate(program: Command): void {
  program
    .command('migrate')
    .description('create or upgrade the database schema (safe to run from many replicas at once)')
    .option('--json', 'print JSON')
    .action(async (opts: { json?: boolean }, cmd: Command) => {
      const ctx = await cliContext(cmd.optsWithGlobals<GlobalOptions>());
      const result = await withClient(ctx, (ns) => ns.migrate());
      if (opts.json) return json(result);
      if (result.applied.length === 0) out(`schema "${result.schema}" is up to date (migration ${result.to})`);
      else out(`schema "${result.schema}" migrated from ${result.from} to ${result.to}: ${result.applied.map((m) => `${m.version} ${m.name}`).join(', ')}`);
    });
}
