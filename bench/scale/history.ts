import type pg from 'pg';
import type { SystemAdapter } from '../systems/system.js';

/**
 * Retained history for the drain-vs-history curve: "insert N finished jobs" for each system, in
 * SQL (INSERT … SELECT generate_series, in chunks), where that system keeps finished jobs, shaped
 * as its own completion leaves them. Far faster than running N jobs, and the same for every system.
 */
export interface HistoryPreload {
  /** Where the rows go, for the results (e.g. `nightshift.jobs_history`). */
  where(db: pg.Client): Promise<string>;
  /** Inserts `n` finished jobs; returns how many the system keeps (0 for one that keeps none). */
  insertFinished(db: pg.Client, n: number): Promise<number>;
}

/** Rows per INSERT statement: each chunk commits on its own, so no statement runs for minutes. */
const CHUNK = 500_000;

interface Column {
  name: string;
  type: string;
  notNull: boolean;
  /** Has a default, identity or generation expression. */
  defaulted: boolean;
  generated: boolean;
}

async function columns(db: pg.Client, table: string): Promise<Column[]> {
  const { rows } = await db.query<Column>(
    `SELECT a.attname AS name, format_type(a.atttypid, a.atttypmod) AS type, a.attnotnull AS "notNull",
            (a.atthasdef OR a.attidentity <> '' OR a.attgenerated <> '') AS defaulted, a.attgenerated <> '' AS generated
     FROM pg_attribute a WHERE a.attrelid = $1::regclass AND a.attnum > 0 AND NOT a.attisdropped ORDER BY a.attnum`,
    [table],
  );
  return rows;
}

/**
 * What nightshift's completion leaves in a finished row, by column name (`g` is the row's number
 * in generate_series, `o.base` the rows inserted before this chunk). Finished times are spread over the last hour (at
 * most a millisecond apart), recent enough that the one-day retention prunes none of them during
 * the drain; started 5 ms before finishing.
 */
const FINISHED: Record<string, string> = {
  kind: `'bench.noop'`,
  queue: `'default'`,
  state: `'completed'`,
  priority: '0',
  payload: `jsonb_build_object('i', g + o.base)`,
  attempt: '1',
  max_attempts: '10',
  at_most_once: 'false',
  run_at: `now() - interval '1 hour' - interval '10 ms'`,
  created_at: `now() - interval '1 hour' - interval '10 ms'`,
  finished_at: `now() - (((g + o.base) % 3600000) * interval '1 ms')`,
  started_at: `now() - (((g + o.base) % 3600000) * interval '1 ms') - interval '5 ms'`,
};

/** A type's neutral value, for a NOT NULL column without a default that FINISHED does not name. */
function neutral(c: Column): string {
  if (/^(text|character varying)/.test(c.type)) return `''`;
  if (/^jsonb?$/.test(c.type)) return `'{}'`;
  if (/^(integer|bigint|smallint|numeric|real|double precision)/.test(c.type)) return '0';
  if (c.type === 'boolean') return 'false';
  if (c.type.startsWith('timestamp')) return 'now()';
  throw new Error(`history preload: cannot fill NOT NULL column "${c.name}" (${c.type}) of the nightshift table; name it in FINISHED in bench/scale/history.ts`);
}

/**
 * nightshift: finished jobs go where nightshift keeps them, detected from the schema — a
 * `jobs_history` table when one exists, completed rows of `jobs` otherwise. The column list is
 * read from the catalogue, so the preload follows the schema as it changes: named columns get
 * what a completion writes, other NOT NULL columns without a default a neutral value, ids the
 * jobs' own sequence (so they never collide with the jobs enqueued after).
 */
export function nightshiftHistory(schema: string): HistoryPreload {
  const target = async (db: pg.Client) => {
    const { rows } = await db.query<{ history: string | null }>(`SELECT to_regclass($1) AS history`, [`${schema}.jobs_history`]);
    return rows[0]!.history ? `${schema}.jobs_history` : `${schema}.jobs`;
  };
  return {
    where: target,
    async insertFinished(db, n) {
      if (n <= 0) return 0;
      const table = await target(db);
      const cols = (await columns(db, table)).filter((c) => !c.generated);
      const { rows } = await db.query<{ seq: string | null }>(`SELECT pg_get_serial_sequence($1, 'id') AS seq`, [`${schema}.jobs`]);
      const names: string[] = [];
      const exprs: string[] = [];
      for (const c of cols) {
        let e: string | undefined = FINISHED[c.name];
        if (c.name === 'id' && !c.defaulted) e = rows[0]?.seq ? `nextval('${rows[0].seq}')` : '-g';
        if (e === undefined && c.notNull && !c.defaulted) e = neutral(c);
        if (e === undefined) continue;
        names.push(`"${c.name}"`);
        exprs.push(`(${e})::${c.type}`);
      }
      for (let done = 0; done < n; done += CHUNK) {
        const k = Math.min(CHUNK, n - done);
        await db.query(`INSERT INTO ${table} (${names.join(', ')}) SELECT ${exprs.join(', ')} FROM generate_series(1, $1::int) AS g, (SELECT $2::int AS base) AS o`, [k, done]);
      }
      return n;
    },
  };
}

/** graphile-worker deletes a job when it completes: it keeps no history, so there is nothing to insert. */
export const graphileWorkerHistory: HistoryPreload = {
  where: async () => 'nowhere: graphile-worker deletes completed jobs',
  insertFinished: async () => 0,
};

/** The preload of a system, or undefined for one the curve does not measure. */
export function historyPreload(system: SystemAdapter): HistoryPreload | undefined {
  if (system.id === 'nightshift') return nightshiftHistory('nightshift');
  if (system.id === 'graphile-worker') return graphileWorkerHistory;
  return undefined;
}
