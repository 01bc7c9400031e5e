import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe } from 'vitest';
import { freePort } from '../../src/dev/embedded-postgres.js';

/**
 * A real PgBouncer (Debian's `pgbouncer`) in front of the suite's PostgreSQL, in transaction mode
 * by default — the set-up whose traps (named statements shared across server connections, LISTEN
 * that never hears anything) the pooler tests exercise. It gets a temporary directory with its
 * pgbouncer.ini and userlist, a free loopback port, and is stopped with the tests.
 */

const CANDIDATES = [process.env.PGBOUNCER, '/usr/sbin/pgbouncer', '/usr/bin/pgbouncer', '/usr/local/bin/pgbouncer'];

/** The pgbouncer binary, or undefined when none is installed. */
export const pgbouncerPath: string | undefined = CANDIDATES.find((p): p is string => !!p && existsSync(p));

/** Options of {@link startPgBouncer}. */
export interface PgBouncerOptions {
  /** `pool_mode`. Default `transaction`. */
  poolMode?: 'transaction' | 'session' | 'statement';
  /** Server connections per database/user pair. Default 5: few, so client connections really share them. */
  poolSize?: number;
}

/** A running PgBouncer. */
export interface PgBouncer {
  readonly port: number;
  /** `databaseUrl` with its host and port replaced by PgBouncer's. */
  readonly url: string;
  /** What PgBouncer logged so far (its warnings say what clients did wrong). */
  output(): string;
  /** Stops PgBouncer and removes its directory. Safe twice. */
  destroy(): Promise<void>;
}

/** Starts PgBouncer in front of `databaseUrl` (a loopback URL with user and password) and resolves once it accepts connections. */
export async function startPgBouncer(databaseUrl: string, options: PgBouncerOptions = {}): Promise<PgBouncer> {
  if (!pgbouncerPath) throw new Error('pgbouncer is not installed (apt-get install pgbouncer)');
  const binary = pgbouncerPath;
  const target = new URL(databaseUrl);
  const user = decodeURIComponent(target.username);
  const password = decodeURIComponent(target.password);
  const database = target.pathname.replace(/^\//, '') || 'postgres';
  const dir = await mkdtemp(join(tmpdir(), 'nightshift-pgbouncer-'));
  // PgBouncer refuses to run as root; as root it drops to the `postgres` user (which the embedded
  // server runs as too, see src/dev/embedded-postgres.ts), so that user must read the directory.
  const asRoot = process.getuid?.() === 0;
  if (asRoot) await chmod(dir, 0o755);
  const userlist = join(dir, 'userlist.txt');
  await writeFile(userlist, `"${user}" "${password}"\n`, { mode: 0o644 });
  let child: ChildProcess | undefined;
  let port = 0;
  let log = '';

  const launch = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const args = [...(asRoot ? ['-u', 'postgres'] : []), join(dir, 'pgbouncer.ini')];
      const proc = spawn(binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
      child = proc;
      let output = '';
      let ready = false;
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        log += chunk.toString();
        if (process.env.PGBOUNCER_LOG) process.stderr.write(chunk);
        if (!ready && output.includes('process up')) {
          ready = true;
          resolve();
        }
      };
      proc.stdout!.on('data', onData);
      proc.stderr!.on('data', onData);
      proc.on('error', reject);
      proc.on('exit', (code, signal) => {
        if (!ready) reject(new Error(`pgbouncer exited (${code ?? signal}) before it was ready:\n${output.slice(-2000)}`));
      });
    });

  const killOnExit = () => {
    child?.kill('SIGKILL');
  };
  process.on('exit', killOnExit);

  for (let attempt = 1; ; attempt++) {
    port = await freePort();
    await writeFile(
      join(dir, 'pgbouncer.ini'),
      [
        '[databases]',
        `${database} = host=${target.hostname} port=${target.port || 5432} dbname=${database}`,
        '[pgbouncer]',
        'listen_addr = 127.0.0.1',
        `listen_port = ${port}`,
        'unix_socket_dir =',
        // md5 for clients (pg sends the hash), and the plain password from the userlist lets
        // PgBouncer answer the server's SCRAM or md5 challenge.
        'auth_type = md5',
        `auth_file = ${userlist}`,
        `pool_mode = ${options.poolMode ?? 'transaction'}`,
        `default_pool_size = ${options.poolSize ?? 5}`,
        'max_client_conn = 500',
        'ignore_startup_parameters = extra_float_digits,options',
        'logfile =',
        'pidfile =',
        `log_connections = ${process.env.PGBOUNCER_LOG ? 1 : 0}`,
        `log_disconnections = ${process.env.PGBOUNCER_LOG ? 1 : 0}`,
        '',
      ].join('\n'),
      { mode: 0o644 },
    );
    try {
      await launch();
      break;
    } catch (err) {
      // Another process may have taken the port between probing and binding.
      if (attempt >= 5 || !/Address already in use|bind\(\)/i.test(String(err))) throw err;
    }
  }

  const url = new URL(databaseUrl);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  let destroyed = false;
  return {
    port,
    url: url.toString(),
    output: () => log,
    async destroy() {
      if (destroyed) return;
      destroyed = true;
      process.off('exit', killOnExit);
      const proc = child;
      if (proc && proc.exitCode === null && proc.signalCode === null) {
        // SIGTERM: PgBouncer closes every connection at once and exits.
        await new Promise<void>((resolve) => {
          proc.once('exit', () => resolve());
          proc.kill('SIGTERM');
        });
      }
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A describe block that needs PgBouncer. Without it the block is skipped with a message, except
 * under `CI=true`, where a missing binary fails the run (.ci/run installs Debian's package).
 */
export function describeWithPgBouncer(name: string, fn: () => void): void {
  if (pgbouncerPath) {
    describe(name, fn);
    return;
  }
  if (process.env.CI === 'true') {
    describe(name, () => {
      beforeAll(() => {
        throw new Error("pgbouncer is required under CI=true but is not installed (.ci/run installs Debian's pgbouncer)");
      });
      fn();
    });
    return;
  }
  console.warn(`skipping "${name}": pgbouncer is not installed (apt-get install pgbouncer, or set PGBOUNCER)`);
  describe.skip(name, fn);
}

/** Starts PgBouncer in front of `databaseUrl()` before the file's tests and stops it after. */
export function usePgBouncer(databaseUrl: () => string, options: PgBouncerOptions = {}): { bouncer(): PgBouncer } {
  let bouncer: PgBouncer | undefined;
  beforeAll(async () => {
    bouncer = await startPgBouncer(databaseUrl(), options);
  });
  afterAll(async () => {
    await bouncer?.destroy();
  });
  return {
    bouncer() {
      if (!bouncer) throw new Error('pgbouncer not started (use inside a test or hook)');
      return bouncer;
    },
  };
}
