// A throw-away redis-server for the tour's bets system, when one is installed (Debian:
// `apt-get install redis-server`). Loopback only, no persistence, its own temporary directory.
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../../../src/dev/embedded-postgres.js';
import { waitFor } from './fleet.js';

const CANDIDATES = [process.env.REDIS_SERVER, '/usr/bin/redis-server', '/usr/local/bin/redis-server', '/usr/sbin/redis-server', '/opt/homebrew/bin/redis-server'];

/** The redis-server binary, or undefined when none is installed. */
export const redisServerPath = CANDIDATES.find((p): p is string => !!p && existsSync(p));

/** A running redis-server. */
export interface TourRedis {
  url: string;
  stop(): Promise<void>;
}

/** Starts redis-server and resolves once it accepts connections. */
export async function startTourRedis(): Promise<TourRedis> {
  if (!redisServerPath) throw new Error('redis-server is not installed');
  const dir = mkdtempSync(join(tmpdir(), 'nightshift-tour-redis-'));
  const port = await freePort();
  const child = spawn(redisServerPath, ['--port', String(port), '--bind', '127.0.0.1', '--dir', dir, '--save', '', '--appendonly', 'no'], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  let done = false;
  void exited.then(() => (done = true));
  await waitFor(
    'redis-server to accept connections',
    () => {
      if (done) throw new Error(`redis-server exited:\n${out}`);
      return out.includes('Ready to accept connections');
    },
    30_000,
  );
  return {
    url: `redis://127.0.0.1:${port}`,
    async stop() {
      if (!done) child.kill('SIGTERM');
      await exited;
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
