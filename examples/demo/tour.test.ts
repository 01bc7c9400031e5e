import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { startScript, type Proc } from '../../test/support/processes.js';
import { redisServerPath } from '../../test/support/redis.js';
import { waitFor } from '../../test/support/wait.js';

// `npm start`, run as a user runs it: a real process that starts its own embedded PostgreSQL (and
// redis-server when installed), its fleet of child processes, plays the scripted day and serves
// the dashboard. `--once` must exit 0 with every step reported as it turned out; without it, the
// tour keeps running until Ctrl-C (SIGINT) and then stops every child and PostgreSQL.
const TOUR = 'examples/demo/main.ts';
const ci = process.env.CI === 'true';

/** Whether something still listens on a loopback port. */
const listening = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = connect(port, '127.0.0.1');
    s.once('connect', () => (s.destroy(), resolve(true)));
    s.once('error', () => resolve(false));
  });
const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
const ended = async (p: Proc) => {
  // Bounded: a tour that hangs is killed (its children are in their own groups: the finally of the tour stops them).
  const timer = setTimeout(() => p.kill('SIGTERM'), 150_000);
  const r = await p.exited;
  clearTimeout(timer);
  return r;
};

describe('npm start: the tour of the four seed systems', () => {
  it('--once plays the scripted day, reports each step as it turned out and exits 0', async () => {
    if (!redisServerPath && ci) throw new Error('redis-server is required under CI=true (the bets step)');
    const p = startScript(TOUR, {}, ['--once']);
    const { code } = await ended(p);
    const out = p.output();
    expect(code, out).toBe(0);
    const lines = out.split('\n');
    expect(lines).toContain('[ok]   bo-engine: the settlement, a failed pool and its rerun');
    expect(out).toMatch(/settlement of day \d+: failed — step "settle" item "pool-3" failed: pool 3: settlement transaction reverted/);
    expect(out).toContain('rerun after the fix: succeeded; pools settled again: [3]');
    expect(lines).toContain('[ok]   payment-manager: a payment held for review, resolved');
    expect(out).toMatch(/PSP row in MANUAL_REVIEW, job \d+ held: "orphan rqUID/);
    expect(out).toContain('intent SETTLED through the outbox; the PSP was asked to confirm 1 time(s); audited as ops-anna');
    expect(lines).toContain('[ok]   operations-worker: a debounced pack change');
    expect(out).toMatch(/three pack changes \(ann, bob, ann\) → job ids \[(\d+), \1, \1\]: 1 job, due in ~30 minutes: yes/);
    expect(out).toContain('run now: 1 push, to tok-bob');
    if (redisServerPath) {
      expect(lines).toContain('[ok]   bets: an intent that expired');
      expect(out).toContain('rejected (intent_expired), escrow calls: 0');
    } else {
      expect(out).toContain('[skip] bets: an intent that expired: redis-server is not installed (apt-get install redis-server)');
    }
    expect(out).toMatch(/pages: bo-engine 200, payment-manager 200, operations-worker 200(, bets 200)?/);
    expect(out).toMatch(/(\d+) of \1 steps turned out as expected/);
    expect(out).not.toContain('[FAIL]');
  }, 600_000); // the whole day, eight processes starting on a loaded CI machine: a bound, not a measure

  it('without --once it serves the dashboard on 127.0.0.1 until Ctrl-C, then stops every child and PostgreSQL', async () => {
    const p = startScript(TOUR, {});
    try {
      await p.waitForLine('Ctrl-C stops everything');
      const out = p.output();
      const url = /the dashboard is on (http:\/\/127\.0\.0\.1:\d+\/)/.exec(out)![1]!;
      const page = await fetch(`${url}payment-manager/`);
      expect(page.status).toBe(200);
      const pids = [...out.matchAll(/\(pid (\d+)\)/g)].map((m) => Number(m[1]));
      expect(pids.length).toBeGreaterThanOrEqual(6);
      const pgPort = Number(/PostgreSQL on 127\.0\.0\.1:(\d+)/.exec(out)![1]);
      expect(await listening(pgPort)).toBe(true);
      p.kill('SIGINT');
      const { code } = await ended(p);
      expect(code, p.output()).toBe(0);
      expect(p.output()).toContain('stopped: every process of the fleet, and PostgreSQL');
      // Gone: every child (reaped by the tour before it exited) and the database server.
      await waitFor('the fleet to be gone', () => pids.every((pid) => !alive(pid)), { timeoutMs: 10_000 });
      expect(await listening(pgPort)).toBe(false);
    } finally {
      // Never SIGKILL the tour: its children would outlive it. SIGTERM stops it as Ctrl-C does.
      p.kill('SIGTERM');
      await p.exited;
    }
  }, 600_000); // the whole day first, as with --once: a bound, not a measure
});
