import { loadConfig, type LoadedConfig } from '../config/load-config.js';
import { toClientOptions } from '../config/define-config.js';
import { createNightshift, type Nightshift } from '../runtime/nightshift.js';
import type { NightshiftOptions } from '../runtime/client-options.js';
import { createLogger } from '../telemetry/logger.js';
import { UsageError } from './exit-codes.js';

/** Options every command takes. */
export interface GlobalOptions {
  databaseUrl?: string;
  config?: string;
  schema?: string;
  actor?: string;
}

/** What a command works with: the loaded config and a client made from it. */
export interface CliContext {
  loaded: LoadedConfig;
  databaseUrl: string;
  /** A client for this command (stopped by the caller). */
  client(extra?: { roles?: string[]; worker?: boolean; overrides?: Partial<NightshiftOptions> }): Nightshift;
}

/**
 * Loads the config and resolves the database URL (`--database-url`, else `DATABASE_URL`, else the
 * config's `database.url`). The URL never has to be on the command line.
 */
export async function cliContext(g: GlobalOptions): Promise<CliContext> {
  const loaded = await loadConfig(g.config);
  const databaseUrl = g.databaseUrl ?? process.env.DATABASE_URL ?? loaded.config.database?.url;
  if (!databaseUrl) {
    throw new UsageError('no database URL', 'set DATABASE_URL (or pass --database-url, or database.url in the config)');
  }
  if (!/^postgres(ql)?:\/\//.test(databaseUrl)) {
    throw new UsageError('the database URL must start with postgres:// or postgresql://', 'check DATABASE_URL');
  }
  return {
    loaded,
    databaseUrl,
    client(extra = {}) {
      const options = toClientOptions(loaded.config, { databaseUrl, ...(extra.roles ? { roles: extra.roles } : {}) });
      return createNightshift({
        ...options,
        ...(g.schema ? { schema: g.schema } : {}),
        ...(g.actor ? { actor: g.actor } : {}),
        // Admin commands are short-lived: a small pool, no process registration, no maintenance,
        // and unnamed statements unless the config says otherwise — a command runs each statement
        // about once, so naming saves nothing, and behind a transaction-mode pooler it would only
        // earn a warning in the command's output (docs/poolers.md).
        ...(extra.worker ? {} : { maxConnections: 2, registerProcess: false, maintenance: false, ...(options.preparedStatements === undefined ? { preparedStatements: false } : {}) }),
        logger: loaded.config.logger ?? createLogger({ level: process.env.NIGHTSHIFT_LOG_LEVEL ?? (extra.worker ? 'info' : 'warn') }),
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
  } finally {
    await ns.stop();
  }
}
