import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { useTestDatabase } from '../support/db.js';
import { startScript, type Proc } from '../support/processes.js';
import { waitFor } from '../support/wait.js';

// Three real processes campaign for one daemon; holders are killed and frozen for real.

const t = useTestDatabase('mp');
t.migrateBeforeAll();
const q = () => `"${t.schema}"`;
const FIXTURE = 'test/leadership/fixtures/daemon-process.ts';

const procs: Proc[] = [];

function start(mode = 'fenced'): Proc {
  const p = startScript(FIXTURE, { NS_TEST_DATABASE_URL: t.url, NS_TEST_SCHEMA: t.schema, NS_TEST_TTL_MS: '1500', NS_TEST_MODE: mode });
  procs.push(p);
  return p;
}

afterEach(async (ctx) => {
  if (ctx.task.result?.state === 'fail') {
    for (const p of procs) console.error(`--- process ${p.pid}\n${p.output()}`);
  }
  for (const p of procs.splice(0)) {
    if (p.child.exitCode === null && p.child.signalCode === null) {
      p.kill('SIGCONT');
      p.kill('SIGKILL');
      await p.exited;
    }
  }
});

beforeAll(async () => {
  await t.sql.query(`CREATE TABLE ${q()}.mp_records (id bigserial PRIMARY KEY, token bigint NOT NULL, pid int NOT NULL, at timestamptz NOT NULL)`);
  await t.sql.query(`CREATE TABLE ${q()}.mp_refusals (id bigserial PRIMARY KEY, token bigint NOT NULL, pid int NOT NULL, at timestamptz NOT NULL DEFAULT now(), message text)`);
});

interface Lease {
  pid: number;
  token: string;
}

async function currentLease(): Promise<Lease | undefined> {
  const { rows } = await t.sql.query(`SELECT holder, token::text FROM ${q()}.leases WHERE name = 'daemon:recorder' AND expires_at > now()`);
  const row = rows[0] as { holder: string; token: string } | undefined;
  return row ? { pid: Number(row.holder.split(':').at(-1)), token: row.token } : undefined;
}

async function recordsBy(pid: number, token?: string): Promise<number> {
  const { rows } = await t.sql.query(`SELECT count(*)::int AS n FROM ${q()}.mp_records WHERE pid = $1 AND ($2::bigint IS NULL OR token = $2)`, [pid, token ?? null]);
  return rows[0].n;
}

describe('daemons across processes', () => {
  it('runs on exactly one process, fails over when the holder is killed, and refuses a frozen holder’s late writes', async () => {
    const all = [start(), start(), start()];
    await Promise.all(all.map((p) => p.waitForLine('ready')));

    // Exactly one runs it: a leader, writing, and nobody else writing.
    const first = await waitFor('a leader', currentLease);
    const seenBefore = await recordsBy(first.pid, first.token);
    await waitFor('the leader to keep writing', async () => (await recordsBy(first.pid, first.token)) >= seenBefore + 5);
    const { rows: writers } = await t.sql.query(`SELECT DISTINCT pid, token::text FROM ${q()}.mp_records`);
    expect(writers).toEqual([{ pid: first.pid, token: first.token }]);

    // SIGKILL the holder: another process takes over, under a larger token.
    const victim = all.find((p) => p.pid === first.pid)!;
    victim.child.kill('SIGKILL');
    await victim.exited;
    const second = await waitFor('a new leader after the kill', async () => {
      const l = await currentLease();
      return l && l.pid !== first.pid && (await recordsBy(l.pid, l.token)) > 0 ? l : undefined;
    });
    expect(BigInt(second.token)).toBeGreaterThan(BigInt(first.token));

    // SIGSTOP the new holder: the third process takes over once its lease runs out.
    const frozen = all.find((p) => p.pid === second.pid)!;
    frozen.child.kill('SIGSTOP');
    const third = await waitFor('the third process to take over from the frozen one', async () => {
      const l = await currentLease();
      return l && l.pid !== second.pid && (await recordsBy(l.pid, l.token)) > 0 ? l : undefined;
    });
    expect(third.pid).not.toBe(first.pid);
    expect(BigInt(third.token)).toBeGreaterThan(BigInt(second.token));

    // Wake it: its next write under the old token is refused, and recorded as such.
    frozen.child.kill('SIGCONT');
    const refusal = await waitFor('the woken holder’s write to be refused', async () => {
      const { rows } = await t.sql.query(`SELECT token::text, message FROM ${q()}.mp_refusals WHERE pid = $1`, [second.pid]);
      return rows[0] as { token: string; message: string } | undefined;
    });
    expect(refusal.token).toBe(second.token);
    expect(refusal.message).toContain('write refused by fencing');
    // It stays alive and campaigning, not leading: the third process still holds the lease.
    await frozen.waitForLine(`deposed ${second.token}`);
    expect(frozen.child.exitCode).toBeNull();
    expect((await currentLease())?.pid).toBe(third.pid);

    // Stop the survivors cleanly.
    for (const p of all.filter((x) => x !== victim)) p.child.kill('SIGTERM');
    const exits = await Promise.all(all.filter((x) => x !== victim).map((p) => p.exited));
    expect(exits).toEqual([
      { code: 0, signal: null },
      { code: 0, signal: null },
    ]);

    // The whole history: in time order tokens never go back, and no token was ever used by two processes.
    const { rows } = await t.sql.query(`SELECT token::text, pid FROM ${q()}.mp_records ORDER BY at, id`);
    const history = rows as { token: string; pid: number }[];
    const pidOf = new Map<string, number>();
    for (let i = 0; i < history.length; i++) {
      const r = history[i]!;
      if (i > 0) expect(BigInt(r.token)).toBeGreaterThanOrEqual(BigInt(history[i - 1]!.token));
      expect(pidOf.get(r.token) ?? r.pid).toBe(r.pid);
      pidOf.set(r.token, r.pid);
    }
    expect([...pidOf.entries()].slice(0, 3)).toEqual([
      [first.token, first.pid],
      [second.token, second.pid],
      [third.token, third.pid],
    ]);
    // The refused token is older than the term that was current when it was refused.
    const { rows: refusals } = await t.sql.query(`SELECT token::text, pid FROM ${q()}.mp_refusals`);
    expect(refusals).toEqual([{ token: second.token, pid: second.pid }]);
  });

  // Issue 11, bug 6: an `everyMs` daemon frozen past its lease woke with its delay timer and its
  // term's deadline both expired; the run went once more, and its unfenced ctx.db write landed
  // after the new holder had taken over.
  it('a holder frozen past its lease writes nothing more through ctx.db once it wakes', async () => {
    const all = [start('unfenced'), start('unfenced')];
    await Promise.all(all.map((p) => p.waitForLine('ready')));
    const first = await waitFor('a leader writing', async () => {
      const l = await currentLease();
      return l && all.some((p) => p.pid === l.pid) && (await recordsBy(l.pid, l.token)) > 3 ? l : undefined;
    });
    const frozen = all.find((p) => p.pid === first.pid)!;
    frozen.child.kill('SIGSTOP');
    const next = await waitFor('the other process to take over and write', async () => {
      const l = await currentLease();
      return l && l.pid !== first.pid && (await recordsBy(l.pid, l.token)) > 3 ? l : undefined;
    });
    frozen.child.kill('SIGCONT');
    await frozen.waitForLine(`deposed ${first.token}`);
    // Let the woken process go on for a while as the follower it now is.
    await waitFor('the new leader to keep writing', async () => (await recordsBy(next.pid, next.token)) > 20);
    const { rows } = await t.sql.query(
      `SELECT count(*)::int AS n FROM ${q()}.mp_records r
       WHERE r.pid = $1 AND r.token = $2 AND r.at > (SELECT min(at) FROM ${q()}.mp_records WHERE token = $3)`,
      [first.pid, first.token, next.token],
    );
    expect(rows[0].n).toBe(0);
  });
});
