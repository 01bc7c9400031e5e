import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Database } from '../db/database.js';
import { processList, processRemove, processRemoveLapsed, processStatements, processUpsert, type ProcessRow } from '../db/processes.js';
import { PeriodicTask } from '../lifecycle/periodic.js';
import { nightshiftVersion } from './version.js';

/** What a process hosts and what it runs now: the `info` of its registry row, refreshed every heartbeat. */
export interface ProcessInfo {
  /** Job kinds it runs, and the queues it claims them from. */
  kinds: string[];
  queues: string[];
  schedules: string[];
  /** Daemons it campaigns for (it runs those it leads, see `leading`). */
  daemons: string[];
  /** Stream consumers it hosts, and those running now (a singleton runs where it leads). */
  consumers: string[];
  activeConsumers: string[];
  /** Jobs run at once at most, and jobs whose lease it holds now. */
  concurrency: number;
  running: number;
  /** Leases it holds now: `daemon:<name>`, `nightshift:maintenance`, singleton consumers. */
  leading: string[];
}

/**
 * Registers this process (host, pid, roles, version, what it hosts and runs), refreshes that and
 * `last_seen_at` every `heartbeatMs`, and removes it on a clean stop. Processes that stop
 * heartbeating (killed) are removed by any other process after `3 × heartbeatMs`.
 */
export class ProcessRegistry {
  readonly id = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  private readonly st;
  private readonly task: PeriodicTask;
  private started = false;

  constructor(
    private readonly db: Database,
    private readonly roles: string[],
    private readonly info: () => ProcessInfo,
    private readonly heartbeatMs: number,
    onError: (err: unknown) => void,
  ) {
    this.st = processStatements(db.statements);
    this.task = new PeriodicTask('process heartbeat', heartbeatMs, () => this.beat(), onError, 0.1);
  }

  async start(): Promise<void> {
    if (this.started) return;
    this.started = true;
    await this.beat();
    this.task.start();
  }

  async stop(): Promise<void> {
    if (!this.started) return;
    this.started = false;
    await this.task.stop();
    await processRemove(this.db.pool.pool, this.st, this.id).catch(() => undefined);
  }

  private async beat(): Promise<void> {
    await processUpsert(this.db.pool.pool, this.st, {
      id: this.id,
      host: hostname(),
      pid: process.pid,
      roles: this.roles,
      version: nightshiftVersion(),
      info: this.info(),
    });
    await processRemoveLapsed(this.db.pool.pool, this.st, this.heartbeatMs * 3);
  }
}

/** Every registered process. */
export function listProcesses(db: Database): Promise<ProcessRow[]> {
  return processList(db.pool.pool, processStatements(db.statements));
}
