import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import type { BenchServer } from './server.js';

/**
 * The raw-SQL ceiling of this machine's PostgreSQL for a job queue's work, with no queue library:
 * a minimal table and index, and the three statements any queue needs. Measured with pgbench when
 * it is installed, otherwise with a plain `pg` loop running the same statements.
 */

const TABLE = `
CREATE TABLE raw_jobs (
  id      bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  queue   text        NOT NULL,
  state   smallint    NOT NULL DEFAULT 0,
  run_at  timestamptz NOT NULL DEFAULT now(),
  owner   integer,
  payload jsonb       NOT NULL
);
CREATE INDEX raw_jobs_claim ON raw_jobs (queue, run_at, id) WHERE state = 0;
CREATE INDEX raw_jobs_owner ON raw_jobs (owner) WHERE state = 1;`;

const INSERT_ONE = `INSERT INTO raw_jobs (queue, payload) VALUES ('q', '{"i":1}');`;
const INSERT_BATCH = `INSERT INTO raw_jobs (queue, payload) SELECT 'q', '{"i":1}' FROM generate_series(1, 100);`;
// Claim a batch of 100 with SKIP LOCKED (one commit), then delete what this client holds (a second
// commit): the two writes a worker makes per batch. `:client_id` is pgbench's; the loop passes $1.
const CLAIM = `UPDATE raw_jobs SET state = 1, owner = :client_id WHERE id IN (SELECT id FROM raw_jobs WHERE queue = 'q' AND state = 0 AND run_at <= now() ORDER BY run_at, id LIMIT 100 FOR UPDATE SKIP LOCKED);`;
const DELETE = `DELETE FROM raw_jobs WHERE state = 1 AND owner = :client_id;`;

/** One ceiling figure. */
export interface CeilingFigure {
  key: 'insert-one' | 'insert-batch' | 'claim-delete';
  jobsPerSecond: number;
}

/** How the ceiling was measured, for the report. */
export interface CeilingMethod {
  tool: string;
  clients: Record<CeilingFigure['key'], number>;
}

const CLIENTS: Record<CeilingFigure['key'], number> = { 'insert-one': 16, 'insert-batch': 4, 'claim-delete': 4 };

/** Finds pgbench (PGBENCH, PATH, /usr/bin), or null. */
export function findPgbench(): string | null {
  const candidates = [process.env.PGBENCH, ...(process.env.PATH ?? '').split(':').map((d) => join(d, 'pgbench')), '/usr/bin/pgbench'];
  return candidates.find((c): c is string => !!c && existsSync(c)) ?? null;
}

/** Measures the three ceilings once; `seconds` per timed figure, `claimRows` rows claimed and deleted. */
export async function measureCeiling(server: BenchServer, dbName: string, seconds: number, claimRows: number, usePgbench: boolean): Promise<{ figures: CeilingFigure[]; method: CeilingMethod }> {
  const url = await server.createDatabase(dbName);
  const db = new pg.Client({ connectionString: url });
  await db.connect();
  const pgbench = usePgbench ? findPgbench() : null;
  const tool = pgbench ? `pgbench (${pgbench})` : `node-postgres loop (${usePgbench ? 'pgbench not found' : '--no-pgbench'})`;
  const count = async () => (await db.query<{ n: string }>('SELECT count(*) AS n FROM raw_jobs')).rows[0]!.n;
  const reset = async () => {
    await db.query('TRUNCATE raw_jobs');
    await db.query('CHECKPOINT').catch(() => undefined);
  };
  try {
    await db.query(TABLE);
    const figures: CeilingFigure[] = [];

    await reset();
    let ms = await runFor(pgbench, url, [INSERT_ONE], CLIENTS['insert-one'], { seconds });
    figures.push({ key: 'insert-one', jobsPerSecond: Number(await count()) / (ms / 1000) });

    await reset();
    ms = await runFor(pgbench, url, [INSERT_BATCH], CLIENTS['insert-batch'], { seconds });
    figures.push({ key: 'insert-batch', jobsPerSecond: Number(await count()) / (ms / 1000) });

    await reset();
    await db.query(`INSERT INTO raw_jobs (queue, payload) SELECT 'q', jsonb_build_object('i', g) FROM generate_series(1, $1) g`, [claimRows]);
    await db.query('VACUUM ANALYZE raw_jobs');
    await db.query('CHECKPOINT').catch(() => undefined);
    const perClient = Math.floor(claimRows / 100 / CLIENTS['claim-delete']);
    ms = await runFor(pgbench, url, [CLAIM, DELETE], CLIENTS['claim-delete'], { transactions: perClient });
    figures.push({ key: 'claim-delete', jobsPerSecond: (claimRows - Number(await count())) / (ms / 1000) });
    return { figures, method: { tool, clients: CLIENTS } };
  } finally {
    await db.end();
    await server.dropDatabase(dbName);
  }
}

/** Runs a script on `clients` connections for a time or a number of executions per client; wall ms. */
async function runFor(pgbench: string | null, url: string, script: string[], clients: number, limit: { seconds?: number; transactions?: number }): Promise<number> {
  return pgbench ? runPgbench(pgbench, url, script, clients, limit) : runLoop(url, script, clients, limit);
}

async function runPgbench(bin: string, url: string, script: string[], clients: number, limit: { seconds?: number; transactions?: number }): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'ns-bench-'));
  const file = join(dir, 'script.sql');
  writeFileSync(file, `${script.join('\n')}\n`);
  const u = new URL(url);
  const args = ['-n', '-c', String(clients), '-j', String(Math.min(clients, 2)), '-f', file, '-h', u.hostname, '-p', u.port, '-U', decodeURIComponent(u.username)];
  if (limit.seconds) args.push('-T', String(limit.seconds));
  else args.push('-t', String(limit.transactions));
  args.push(u.pathname.slice(1));
  const t0 = performance.now();
  try {
    await new Promise<void>((resolve, reject) => {
      execFile(bin, args, { env: { ...process.env, PGPASSWORD: decodeURIComponent(u.password) }, timeout: ((limit.seconds ?? 60) + 60) * 1000 }, (err, _out, stderr) =>
        err ? reject(new Error(`pgbench failed: ${stderr || err.message}`)) : resolve(),
      );
    });
    return performance.now() - t0;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function runLoop(url: string, script: string[], clients: number, limit: { seconds?: number; transactions?: number }): Promise<number> {
  const conns = await Promise.all(
    Array.from({ length: clients }, async () => {
      const c = new pg.Client({ connectionString: url });
      await c.connect();
      return c;
    }),
  );
  const statements = script.map((s) => ({ text: s.replace(/:client_id/g, '$1').replace(/;$/, ''), usesId: s.includes(':client_id') }));
  const t0 = performance.now();
  const until = limit.seconds ? t0 + limit.seconds * 1000 : Infinity;
  try {
    await Promise.all(
      conns.map(async (c, id) => {
        for (let k = 0; k < (limit.transactions ?? Infinity) && performance.now() < until; k++) {
          for (const s of statements) await c.query(s.text, s.usesId ? [id] : []);
        }
      }),
    );
    return performance.now() - t0;
  } finally {
    await Promise.all(conns.map((c) => c.end()));
  }
}
