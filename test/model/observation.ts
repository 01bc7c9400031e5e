/**
 * What a model run observed, gathered after it: the processes and their lifetimes, the faults, the
 * enqueues, the database samples taken during the run, the final job rows, the runs recorded in the
 * database (`effects`) and in each process's run log. Times are ms since the epoch: the harness,
 * the workers and PostgreSQL share one host and its clock.
 */
import { existsSync, readFileSync } from 'node:fs';
import type pg from 'pg';
import type { FaultRecord } from '../faults/harness/recorder.js';
import type { Sample } from './sampler.js';
import type { ModelScenario } from './scenario.js';

/** One worker process (a spec's first process or a replacement). */
export interface InstanceRecord {
  name: string;
  /** Index of its WorkerSpec. */
  spec: number;
  pid: number;
  startedAt: number;
  readyAt: number | undefined;
  exitAt: number | undefined;
  /** Whether the harness SIGKILLed it as a fault (otherwise it exited on the final SIGTERM, or by itself). */
  killed: boolean;
  /** How the final SIGTERM went: ms until it exited, and how (SIGKILL: it did not exit in time and was killed). */
  stop: { ms: number; code: number | null; signal: string | null } | undefined;
  output: string;
  logPath: string;
}

/** One enqueue call's copy: what the harness asked and what it got. */
export interface EnqueueRecord {
  step: number;
  copy: number;
  at: number;
  id: string | undefined;
  deduped: boolean | undefined;
  error: string | undefined;
}

/** A job's final row. */
export interface JobRow {
  id: string;
  kind: string;
  queue: string;
  state: string;
  attempt: number;
  maxAttempts: number;
  dedupeKey: string | null;
  runAt: number;
  expiresAt: number | null;
  createdAt: number;
  finishedAt: number | null;
  reason: string | null;
  errors: { attempt: number; at: string; kind: string; message?: string }[];
  leaseToken: string | null;
  leaseOwner: string | null;
  leaseExpiresAt: number | null;
  step: number;
  copy: number;
}

/** A run as the handler recorded it in the database. */
export interface EffectRow {
  jobId: string;
  attempt: number;
  pid: number;
  token: string;
  note: string;
  at: number;
  endedAt: number | null;
  outcome: string | null;
}

/** A run as the process's run log has it: the handler was called (`startMs`) and returned (`endMs`). */
export interface RunEntry {
  pid: number;
  jobId: string;
  attempt: number;
  queue: string;
  token: string;
  startMs: number;
  endMs: number | undefined;
  outcome: string | undefined;
}

export interface Observation {
  scenario: ModelScenario;
  /** The start of the timeline (step and fault offsets count from here). */
  t0: number;
  /** When the drain ended (every job finished, or the drain's bound passed) and the final stop began. */
  drainedAt: number;
  drainTimedOut: boolean;
  instances: InstanceRecord[];
  faults: (FaultRecord & { instance: string })[];
  enqueues: EnqueueRecord[];
  samples: Sample[];
  jobs: JobRow[];
  effects: EffectRow[];
  runs: RunEntry[];
  /** Faults or enqueues the harness could not carry out (an injector error): reported, not judged. */
  harnessErrors: string[];
}

const ms = (col: string) => `(extract(epoch FROM ${col}) * 1000)::float8`;

/** The final job rows and the database record of runs. */
export async function loadRecord(sql: pg.Pool, schema: string): Promise<{ jobs: JobRow[]; effects: EffectRow[] }> {
  const q = `"${schema}"`;
  const { rows: jobs } = await sql.query<JobRow>(
    `SELECT id::text, kind, queue, state::text, attempt, max_attempts AS "maxAttempts", dedupe_key AS "dedupeKey",
            ${ms('run_at')} AS "runAt", ${ms('expires_at')} AS "expiresAt", ${ms('created_at')} AS "createdAt",
            ${ms('finished_at')} AS "finishedAt", reason, coalesce(errors, '[]'::jsonb) AS errors,
            lease_token::text AS "leaseToken", lease_owner AS "leaseOwner", ${ms('lease_expires_at')} AS "leaseExpiresAt",
            (payload->>'step')::int AS step, (payload->>'copy')::int AS copy
     FROM ${q}.jobs_all WHERE kind LIKE 'model-%' ORDER BY id`,
  );
  const { rows: effects } = await sql.query<EffectRow>(
    `SELECT job_id::text AS "jobId", attempt, pid, token::text, note, ${ms('at')} AS at, ${ms('ended_at')} AS "endedAt", outcome
     FROM ${q}.effects ORDER BY id`,
  );
  return { jobs, effects };
}

/** Parses one process's run log (a line cut by a SIGKILL is dropped). */
export function readRunLog(path: string, pid: number): RunEntry[] {
  if (!existsSync(path)) return [];
  const runs: RunEntry[] = [];
  const open = new Map<string, RunEntry>();
  for (const line of readFileSync(path, 'utf8').split('\n')) {
    const f = line.split(' ');
    if (f[0] === 's' && f.length === 6) {
      const r: RunEntry = { pid, jobId: f[1]!, attempt: Number(f[2]), queue: f[3]!, token: f[4]!, startMs: Number(f[5]), endMs: undefined, outcome: undefined };
      runs.push(r);
      open.set(r.token, r);
    } else if (f[0] === 'e' && f.length === 6) {
      const r = open.get(f[3]!);
      if (r) {
        r.endMs = Number(f[4]);
        r.outcome = f[5];
      }
    }
  }
  return runs;
}
