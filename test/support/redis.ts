import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe } from 'vitest';
import { freePort } from '../../src/dev/embedded-postgres.js';

/**
 * A real `redis-server` for tests: Debian's binary, on a free loopback port, with its own temporary
 * directory and append-only file. It can be killed (SIGKILL, a crash) and restarted on the same port
 * and directory, so durability and reconnection are tested against the real thing.
 */

const CANDIDATES = [process.env.REDIS_SERVER, '/usr/bin/redis-server', '/usr/local/bin/redis-server', '/usr/sbin/redis-server'];

/** The redis-server binary, or undefined when none is installed. */
export const redisServerPath: string | undefined = CANDIDATES.find((p): p is string => !!p && existsSync(p));

/** Options of {@link startRedis}. */
export interface RedisServerOptions {
  /** `appendfsync` policy: `always` loses nothing acknowledged on a crash. Default `always`. */
  appendfsync?: 'always' | 'everysec' | 'no';
  /** Extra lines for redis.conf (e.g. `rename-command XAUTOCLAIM ""` to act like Redis < 6.2). */
  config?: string[];
}

/** A running test server. */
export interface RedisServer {
  readonly port: number;
  readonly url: string;
  readonly dir: string;
  /** Kills the server with SIGKILL (a crash: only what the AOF fsync policy wrote survives). */
  kill(): Promise<void>;
  /** Starts the server again on the same port and directory (replaying its append-only file). */
  restart(): Promise<void>;
  /** Kills the server if running and removes its directory. */
  destroy(): Promise<void>;
}

/** Starts redis-server and resolves once it accepts connections (after replaying its AOF). */
export async function startRedis(options: RedisServerOptions = {}): Promise<RedisServer> {
  if (!redisServerPath) throw new Error('redis-server is not installed (apt-get install redis-server)');
  const binary = redisServerPath;
  const dir = await mkdtemp(join(tmpdir(), 'nightshift-redis-'));
  let port = 0;
  let child: ChildProcess | undefined;

  const writeConfig = () =>
    writeFile(
      join(dir, 'redis.conf'),
      [
        `port ${port}`,
        'bind 127.0.0.1',
        `dir ${dir}`,
        'save ""',
        'appendonly yes',
        `appendfsync ${options.appendfsync ?? 'always'}`,
        'daemonize no',
        'logfile ""',
        'loglevel notice',
        ...(options.config ?? []),
      ].join('\n'),
    );

  const launch = (): Promise<void> =>
    new Promise((resolve, reject) => {
      const proc = spawn(binary, [join(dir, 'redis.conf')], { stdio: ['ignore', 'pipe', 'pipe'] });
      child = proc;
      let output = '';
      let ready = false;
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        if (!ready && output.includes('Ready to accept connections')) {
          ready = true;
          resolve();
        }
      };
      proc.stdout!.on('data', onData);
      proc.stderr!.on('data', onData);
      proc.on('error', reject);
      proc.on('exit', (code, signal) => {
        if (!ready) reject(new Error(`redis-server exited (${code ?? signal}) before it was ready:\n${output.slice(-2000)}`));
      });
    });

  const waitExit = (proc: ChildProcess | undefined, signal: NodeJS.Signals) =>
    new Promise<void>((resolve) => {
      if (!proc || proc.exitCode !== null || proc.signalCode !== null) return resolve();
      proc.once('exit', () => resolve());
      proc.kill(signal);
    });

  // If the test process exits without running its hooks (an error, a timeout), take the server along.
  const killOnExit = () => {
    child?.kill('SIGKILL');
  };
  process.on('exit', killOnExit);

  for (let attempt = 1; ; attempt++) {
    port = await freePort();
    await writeConfig();
    try {
      await launch();
      break;
    } catch (err) {
      // Another process may have taken the port between probing and binding.
      if (attempt >= 5 || !String(err).includes('Address already in use')) throw err;
    }
  }

  return {
    port,
    url: `redis://127.0.0.1:${port}`,
    dir,
    kill: () => waitExit(child, 'SIGKILL'),
    async restart() {
      await waitExit(child, 'SIGKILL');
      await launch();
    },
    async destroy() {
      process.off('exit', killOnExit);
      await waitExit(child, 'SIGKILL');
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A describe block that needs redis-server. Without it the block is skipped with a message, except
 * under `CI=true`, where a missing server fails the run (CI installs Debian's package).
 */
export function describeWithRedis(name: string, fn: () => void): void {
  if (redisServerPath) {
    describe(name, fn);
    return;
  }
  if (process.env.CI === 'true') {
    describe(name, () => {
      beforeAll(() => {
        throw new Error("redis-server is required under CI=true but is not installed (.ci/run installs Debian's redis-server)");
      });
      fn();
    });
    return;
  }
  console.warn(`skipping "${name}": redis-server is not installed (apt-get install redis-server, or set REDIS_SERVER)`);
  describe.skip(name, fn);
}

/** Starts a server before the file's tests and destroys it after; `server()` gives the running one. */
export function useRedisServer(options: RedisServerOptions = {}): { server(): RedisServer } {
  let server: RedisServer | undefined;
  beforeAll(async () => {
    server = await startRedis(options);
  });
  afterAll(async () => {
    await server?.destroy();
  });
  return {
    server() {
      if (!server) throw new Error('redis-server not started (use inside a test or hook)');
      return server;
    },
  };
}
