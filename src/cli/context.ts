import { toClientOptions } from '../config/define-config.js';
import { loadConfig, type LoadedConfig } from '../config/load-config.js';
import { isNightshiftError } from '../errors.js';
import { databaseUrlProblem, type NightshiftOptions } from '../runtime/client-options.js';
import { createNightshift, type Nightshift } from '../runtime/nightshift.js';
import type { CliRun } from './cli-io.js';
import { UsageError } from './exit-codes.js';

/** Options every command takes. */
export interface GlobalOptions {
  databaseUrl?: string;
  config?: string;
  schema?: string;
  actor?: string;
}

/** What a command works with: the run, the loaded config and a client made from it. */
export interface CliContext {
  run: CliRun;
  loaded: LoadedConfig;
  databaseUrl: string;
  /** A client for this command (stopped by the caller). */
  client(extra?: { roles?: string[]; worker?: boolean; overrides?: Partial<NightshiftOptions> }): Nightshift;
}

/**
 * Loads the config and resolves the database URL (`--database-url`, else `DATABASE_URL`, else the
 * config's `database.url`). The URL never has to be on the command line.
 */
export async function cliContext(run: CliRun, g: GlobalOptions): Promise<CliContext> {
  // An empty value is a mistake (an unset shell variable), never "the default".
  if (g.schema !== undefined && g.schema.trim() === '') throw new UsageError('--schema is empty', "leave it out to use the config's schema (else nightshift), or name one");
  if (g.actor !== undefined && g.actor.trim() === '') throw new UsageError('--actor is empty', 'leave it out to be user@host, or name yourself');
  const loaded = await loadConfig(g.config, run.cwd);
  const databaseUrl = g.databaseUrl ?? run.env.DATABASE_URL ?? loaded.config.database?.url;
  if (!databaseUrl) {
    throw new UsageError('no database URL', 'set DATABASE_URL (or pass --database-url, or database.url in the config)');
  }
  const problem = databaseUrlProblem(databaseUrl);
  if (problem) throw new UsageError(`the database URL ${problem}`, 'check DATABASE_URL (or --database-url, or database.url in the config)');
  return {
    run,
    loaded,
    databaseUrl,
    client(extra = {}) {
      const options = toClientOptions(loaded.config, { databaseUrl, ...(extra.roles ? { roles: extra.roles } : {}) });
      return createNightshift({
        ...options,
        ...(g.schema !== undefined ? { schema: g.schema } : {}),
        ...(g.actor !== undefined ? { actor: g.actor } : {}),
        // Admin commands are short-lived: a small pool, no process registration, no maintenance,
        // and unnamed statements unless the config says otherwise — a command runs each statement
        // about once, so naming saves nothing, and behind a transaction-mode pooler it would only
        // earn a warning in the command's output (docs/poolers.md).
        ...(extra.worker ? {} : { maxConnections: 2, registerProcess: false, maintenance: false, ...(options.preparedStatements === undefined ? { preparedStatements: false } : {}) }),
        // An admin command's log lines go to `err`: its `out` is the command's output (--json).
        logger:
          loaded.config.logger ??
          run.logger({
            level: run.env.NIGHTSHIFT_LOG_LEVEL ?? (extra.worker ? 'info' : 'warn'),
            ...(loaded.config.redact ? { redact: loaded.config.redact } : {}),
            ...(extra.worker ? {} : { destination: run.err }),
          }),
        ...extra.overrides,
      });
    },
  };
}

/** Runs `fn` with a client, stopping it afterwards. */
export async function withClient<T>(ctx: CliContext, fn: (ns: Nightshift) => Promise<T>): Promise<T> {
  const ns = ctx.client();
  try {
    return await fn(ns);
  } catch (err) {
    throw await notMigratedInstead(ns, err);
  } finally {
    await ns.stop();
  }
}

// undefined_table, undefined_function, invalid_schema_name, undefined_object: what a command on a
// schema without (all of) nightshift's tables runs into.
const MISSING_OBJECT = new Set(['42P01', '42883', '3F000', '42704']);

/**
 * A database error about a missing table or function, on a schema that is not migrated, becomes
 * NS_NOT_MIGRATED (or NS_SCHEMA_TOO_NEW): the fix is `nightshift migrate`, not the database.
 */
async function notMigratedInstead(ns: Nightshift, err: unknown): Promise<unknown> {
  const sqlState = (err as { sqlState?: unknown } | null)?.sqlState;
  if (!isNightshiftError(err) || err.code !== 'NS_DATABASE' || typeof sqlState !== 'string' || !MISSING_OBJECT.has(sqlState)) return err;
  try {
    await ns.checkMigrated();
  } catch (check) {
    if (isNightshiftError(check) && (check.code === 'NS_NOT_MIGRATED' || check.code === 'NS_SCHEMA_TOO_NEW')) return check;
  }
  return err;
}
