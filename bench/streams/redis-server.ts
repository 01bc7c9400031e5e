import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../src/dev/embedded-postgres.js';

const CANDIDATES = [process.env.REDIS_SERVER, '/usr/bin/redis-server', '/usr/local/bin/redis-server', '/usr/sbin/redis-server'];

/** The redis-server binary, or undefined when none is installed. */
export const redisServerPath: string | undefined = CANDIDATES.find((p): p is string => !!p && existsSync(p));

/**
 * The append-only file's fsync policy of the bench's Redis, the same for every system measured:
 * `everysec` (Redis's default with AOF on) unless BENCH_REDIS_APPENDFSYNC says otherwise
 * (`always` is what nightshift's docs ask for when no acknowledged entry may be lost).
 */
export const APPENDFSYNC = process.env.BENCH_REDIS_APPENDFSYNC ?? 'everysec';

/** The benchmark's Redis: Debian's redis-server on a free loopback port, in a temporary directory. */
export interface BenchRedis {
  readonly url: string;
  readonly port: number;
  /** `redis-server --version` and the settings that matter. */
  readonly describe: string;
  destroy(): Promise<void>;
}

let running: { proc: ChildProcess; dir: string } | undefined;

/** Kills the bench's redis-server if one runs and removes its directory (on Ctrl-C, timeouts and exit). */
export function killRedis(): void {
  if (!running) return;
  running.proc.kill('SIGKILL');
  rmSync(running.dir, { recursive: true, force: true });
  running = undefined;
}

/** Starts redis-server and resolves once it accepts connections (bounded: 15 s). */
export async function startBenchRedis(): Promise<BenchRedis> {
  if (!redisServerPath) throw new Error('redis-server is not installed (apt-get install redis-server, or set REDIS_SERVER)');
  const binary = redisServerPath;
  const dir = await mkdtemp(join(tmpdir(), 'nightshift-bench-redis-'));
  const port = await freePort();
  await writeFile(join(dir, 'redis.conf'), [`port ${port}`, 'bind 127.0.0.1', `dir ${dir}`, 'save ""', 'appendonly yes', `appendfsync ${APPENDFSYNC}`, 'daemonize no', 'logfile ""'].join('\n'));
  const proc = spawn(binary, [join(dir, 'redis.conf')], { stdio: ['ignore', 'pipe', 'pipe'] });
  running = { proc, dir };
  let output = '';
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`redis-server not ready in 15 s:\n${output.slice(-1000)}`)), 15_000);
      const onData = (chunk: Buffer) => {
        output += chunk.toString();
        if (output.includes('Ready to accept connections')) {
          clearTimeout(timer);
          resolve();
        }
      };
      proc.stdout!.on('data', onData);
      proc.stderr!.on('data', onData);
      proc.on('error', reject);
      proc.on('exit', (code, signal) => reject(new Error(`redis-server exited (${code ?? signal}):\n${output.slice(-1000)}`)));
    });
  } catch (err) {
    killRedis();
    throw err;
  }
  const version = /Redis version=([^,\s]+)/.exec(output)?.[1] ?? /\bv=([^,\s]+)/.exec(output)?.[1] ?? '?';
  return {
    url: `redis://127.0.0.1:${port}`,
    port,
    describe: `Redis ${version}, appendonly yes, appendfsync ${APPENDFSYNC}, no RDB snapshots`,
    async destroy() {
      proc.kill('SIGKILL');
      if (running?.proc === proc) running = undefined;
      await rm(dir, { recursive: true, force: true });
    },
  };
}
