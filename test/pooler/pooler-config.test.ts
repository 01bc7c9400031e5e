import { afterEach, describe, expect, it } from 'vitest';
import { toClientOptions } from '../../src/config/define-config.js';
import { createNightshift, defineConfig, type NightshiftError } from '../../src/index.js';
import { resolveOptions } from '../../src/runtime/client-options.js';

// The pooler settings in the config file and the client options: defaults, mapping, mistakes.
const URL = 'postgres://u:p@127.0.0.1:6432/app';

function configError(fn: () => unknown): NightshiftError {
  try {
    fn();
  } catch (err) {
    return err as NightshiftError;
  }
  throw new Error('expected an error');
}

describe('pooler settings', () => {
  const saved = process.env.DATABASE_LISTEN_URL;
  afterEach(() => {
    if (saved === undefined) delete process.env.DATABASE_LISTEN_URL;
    else process.env.DATABASE_LISTEN_URL = saved;
  });

  it("defaults: prepared statements 'auto', the listener on the pool's target", () => {
    delete process.env.DATABASE_LISTEN_URL;
    const o = resolveOptions({ databaseUrl: URL });
    expect(o.preparedStatements).toBe('auto');
    expect(o.listenDatabaseUrl).toBeUndefined();
  });

  it('database.preparedStatements and database.listenUrl reach the client options', () => {
    const config = defineConfig({ database: { preparedStatements: false, listenUrl: 'postgres://u:p@db:5432/app' } });
    const o = resolveOptions(toClientOptions(config, { databaseUrl: URL }));
    expect(o.preparedStatements).toBe(false);
    expect(o.listenDatabaseUrl).toBe('postgres://u:p@db:5432/app');
    expect(resolveOptions(toClientOptions(defineConfig({ database: { preparedStatements: 'auto' } }), { databaseUrl: URL })).preparedStatements).toBe('auto');
  });

  it('DATABASE_LISTEN_URL gives the listener URL when no option does', () => {
    process.env.DATABASE_LISTEN_URL = 'postgres://u:p@direct:5432/app';
    expect(resolveOptions({ databaseUrl: URL }).listenDatabaseUrl).toBe('postgres://u:p@direct:5432/app');
    expect(resolveOptions({ databaseUrl: URL, listenDatabaseUrl: 'postgres://x@y/z' }).listenDatabaseUrl).toBe('postgres://x@y/z');
    process.env.DATABASE_LISTEN_URL = 'mysql://nope';
    expect(configError(() => resolveOptions({ databaseUrl: URL })).issues).toEqual([{ path: 'listenDatabaseUrl', message: 'DATABASE_LISTEN_URL must start with postgres:// or postgresql://' }]);
  });

  it('mistakes are reported under their path in the config file, with a did-you-mean', () => {
    const err = configError(() => defineConfig({ database: { preparedStatements: 'yes' as never, listenURL: 'postgres://x' } as never }));
    expect(err.code).toBe('NS_CONFIG_INVALID');
    expect(err.issues).toEqual(expect.arrayContaining([{ path: 'database.listenURL', message: 'unknown key; did you mean "listenUrl"?' }, expect.objectContaining({ path: 'database.preparedStatements' })]));
    const bad = configError(() => defineConfig({ database: { listenUrl: 'mysql://x' } }));
    expect(bad.issues).toEqual([{ path: 'database.listenUrl', message: 'must start with postgres:// or postgresql://' }]);
    expect(configError(() => createNightshift({ databaseUrl: URL, listenDatabaseUrl: 'redis://x' })).issues[0]).toMatchObject({ path: 'listenDatabaseUrl' });
  });
});
