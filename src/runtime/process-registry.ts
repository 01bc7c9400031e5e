import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Database } from '../db/database.js';
import type { ProcessRecord } from '../db/processes.js';
import { PeriodicTask } from '../lifecycle/periodic.js';
import { BaseService, type ServiceOptions } from '../lifecycle/service.js';
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

/** What the registry is built from. */
export interface ProcessRegistryOptions extends ServiceOptions {
  database: Database;
  roles: string[];
  /** Read at every heartbeat: what the process hosts and runs now. */
  info: () => ProcessInfo;
  heartbeatMs: number;
  onError: (err: unknown) => void;
}

/**
 * Registers this process (host, pid, roles, version, what it hosts and runs), refreshes that and
 * `last_seen_at` every `heartbeatMs`, and removes it on a clean stop. Processes that stop
 * heartbeating (killed) are removed by any other process after `3 × heartbeatMs`.
 */
export class ProcessRegistry extends BaseService {
  readonly id = `${hostname()}:${process.pid}:${randomBytes(3).toString('hex')}`;
  private readonly task: PeriodicTask;
  private readonly db: Database;
  private readonly roles: string[];
  private readonly info: () => ProcessInfo;
  private readonly heartbeatMs: number;

  constructor(o: ProcessRegistryOptions) {
    super({ name: 'process registry', kind: 'registry', restartable: true, logger: o.logger, clock: o.clock });
    this.db = o.database;
    this.roles = o.roles;
    this.info = o.info;
    this.heartbeatMs = o.heartbeatMs;
    this.task = new PeriodicTask({ name: 'process heartbeat', intervalMs: o.heartbeatMs, task: () => this.beat(), onError: o.onError, jitter: 0.1, clock: this.clock });
  }

  protected async onStart(): Promise<void> {
    await this.beat();
    await this.task.start();
  }

  protected async onStop(): Promise<void> {
    await this.task.stop();
    await this.db.processes.remove(this.id).catch(() => undefined);
  }

  private async beat(): Promise<void> {
    await this.db.processes.upsert({
      id: this.id,
      host: hostname(),
      pid: process.pid,
      roles: this.roles,
      version: nightshiftVersion(),
      info: this.info(),
    });
    await this.db.processes.removeLapsed({ olderThanMs: this.heartbeatMs * 3 });
  }
}

/** Every registered process. */
export function listProcesses(db: Database): Promise<ProcessRecord[]> {
  return db.processes.list();
}
