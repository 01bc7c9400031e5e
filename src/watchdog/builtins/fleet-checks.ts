import { daemonLeaseName } from '../../leadership/daemon-supervisor.js';
import { nextTick } from '../../schedules/ticks.js';
import type { CheckResult } from '../define-check.js';
import { durationText } from '../notification.js';
import type { BuiltinSpec } from './builtin.js';

const MINUTE = 60_000;

/** Schedules whose due tick nobody decided. */
export const overdueSchedules: BuiltinSpec = {
  key: 'overdueSchedules',
  name: 'nightshift.overdue-schedules',
  description: 'every schedule of the config is ticking',
  thresholds: { graceMs: { default: 2 * MINUTE, duration: true, min: 1_000 } },
  async run(env, t) {
    const defs = env.schedules();
    const rows = new Map((await env.database.schedules.list(defs.map((d) => d.name))).map((r) => [r.name, r]));
    const results: CheckResult[] = [];
    for (const def of defs) {
      const row = rows.get(def.name);
      if (!row) {
        results.push({
          subject: def.name,
          status: 'warning',
          message: `schedule "${def.name}" was never registered: no process hosting it has started. Host it in a role (roles.<role>.schedules${def.name.startsWith('check:') ? `, or .checks for ${def.name.slice(6)}` : ''}) and start that process`,
          details: { schedule: def.name },
        });
        continue;
      }
      // Paused on purpose; another version's timing in force (its ticker warns about that).
      if (row.paused || row.spec !== def.spec) continue;
      const due = nextTick(def.timing, row.last_tick_at.getTime());
      if (due === null) continue;
      const lateMs = row.now.getTime() - due;
      if (lateMs <= t.graceMs!) continue;
      results.push({
        subject: def.name,
        status: 'critical',
        message:
          `schedule "${def.name}" is overdue: its tick at ${new Date(due).toISOString()} has not been decided for ${durationText(lateMs)}. ` +
          'No live process hosting it runs its ticker, or the ticker fails: see `nightshift workers` (schedules) and the logs of those processes (schedule.failed, worker.error)',
        details: { schedule: def.name, dueAt: new Date(due).toISOString(), lateMs: Math.round(lateMs) },
      });
    }
    return results;
  },
};

/** Daemons without a live leader. */
export const leaderlessDaemons: BuiltinSpec = {
  key: 'leaderlessDaemons',
  name: 'nightshift.leaderless-daemons',
  description: 'every daemon has a live leader',
  thresholds: { graceMs: { default: MINUTE, duration: true }, liveWithinMs: { default: MINUTE, duration: true, min: 1_000 } },
  async run(env, t) {
    const rows = await env.database.watchdogBuiltins.daemons({ names: env.daemons(), liveWithinMs: t.liveWithinMs!, leasePrefix: daemonLeaseName('') });
    const results: CheckResult[] = [];
    for (const r of rows) {
      const hosting =
        r.hosts === 0
          ? 'no live process hosts it: start one whose role lists it (roles.<role>.daemons)'
          : `${r.hosts === 1 ? 'one live process hosts' : `${r.hosts} live processes host`} it and none took the lease: see their logs (daemon.failed, leader.deposed) and \`nightshift daemons\``;
      if (r.expired_ms === null) {
        // Never elected: expected for a moment after its first host starts.
        if (r.hosts > 0 && (r.hosted_ms ?? 0) <= t.graceMs!) continue;
        results.push({
          subject: r.name,
          status: r.hosts === 0 ? 'critical' : 'warning',
          message: `daemon "${r.name}" was never elected: ${hosting}`,
          details: { daemon: r.name, hosts: r.hosts },
        });
      } else if (r.expired_ms > t.graceMs!) {
        results.push({
          subject: r.name,
          status: 'critical',
          message: `daemon "${r.name}" has had no leader for ${durationText(r.expired_ms)} (the last was ${r.holder ?? 'unknown'}): ${hosting}`,
          details: { daemon: r.name, hosts: r.hosts, lastHolder: r.holder, leaderlessMs: Math.round(r.expired_ms) },
        });
      }
    }
    return results;
  },
};

/** Stream groups nobody reads, whose pending list grows, or with entries abandoned inside their handler (seed 004's symptom table). */
export const streamGroups: BuiltinSpec = {
  key: 'streams',
  name: 'nightshift.streams',
  description: 'every consumer group of the config is read and acks what it reads',
  thresholds: { stalledAfterMs: { default: MINUTE, duration: true, min: 1_000 }, maxPending: { default: 1_000, min: 1 } },
  applies: (env) => env.diagnoseStreams !== undefined,
  async run(env, t) {
    const diagnosis = await env.diagnoseStreams!({ stalledAfterMs: t.stalledAfterMs! });
    const results: CheckResult[] = [];
    for (const s of diagnosis.streams) {
      for (const g of s.groups) {
        const subject = `${s.stream}/${g.group}`;
        const details = { stream: s.stream, group: g.group, status: g.status, statuses: g.statuses, abandoned: g.abandoned, length: s.length, pending: g.pending, lag: g.lag, consumers: g.consumers.length };
        if (g.status === 'never-started') {
          // Seed 004: no row for the group in XINFO GROUPS — the consumer never started, and the stream grows.
          results.push({
            subject,
            status: s.length > 0 ? 'critical' : 'warning',
            message: `stream "${s.stream}": ${g.statusText}. Start a process whose role hosts the consumer of group "${g.group}" (roles.<role>.consumers)`,
            details,
          });
        } else if (g.status === 'not-reading') {
          results.push({
            subject,
            status: 'critical',
            message: `stream "${s.stream}", group "${g.group}": ${g.statusText}. Is the consumer's process running (roles.<role>.consumers)? Its logs say why it stopped (stream.error, stream.connection-lost)`,
            details,
          });
        } else if (g.status === 'abandoned') {
          // Seed 004: the operator died after escrow — funds locked, the bet open, until onAbandoned (settleEmpty) runs.
          results.push({
            subject,
            status: 'critical',
            message: `stream "${s.stream}", group "${g.group}": ${g.statusText}. A live consumer of the group recovers them; start one if none runs`,
            details,
          });
        } else if (g.status === 'stuck-pending') {
          results.push({ subject, status: 'warning', message: `stream "${s.stream}", group "${g.group}": ${g.statusText}`, details });
        } else if (g.pending > t.maxPending!) {
          results.push({
            subject,
            status: 'warning',
            message: `stream "${s.stream}", group "${g.group}": ${g.pending} entries pending (over ${t.maxPending}): consumers read faster than they ack; look at the handler's failures (stream.failed) and its speed`,
            details,
          });
        }
      }
    }
    return results;
  },
};

/** The fleet over its connection budget. */
export const connectionBudget: BuiltinSpec = {
  key: 'connectionBudget',
  name: 'nightshift.connection-budget',
  description: 'the fleet fits in the connections the server allows',
  thresholds: {
    warningPercent: { default: 80, min: 1, max: 1_000 },
    criticalPercent: { default: 95, min: 1, max: 1_000 },
    liveWithinMs: { default: MINUTE, duration: true, min: 1_000 },
  },
  async run(env, t) {
    const needs = await env.connectionBudget();
    const live = await env.database.watchdogBuiltins.liveProcesses({ liveWithinMs: t.liveWithinMs! });
    const level = (pct: number) => (pct >= t.criticalPercent! ? 'critical' : pct >= t.warningPercent! ? 'warning' : 'ok');
    const usedPct = (needs.inUse / Math.max(1, needs.available)) * 100;
    const fleet = live * needs.perProcess;
    const fleetPct = (fleet / Math.max(1, needs.available)) * 100;
    const fix = 'run fewer replicas or smaller pools (database.maxConnections), raise max_connections, or put a pooler in front (docs/poolers.md)';
    return [
      {
        subject: 'in-use',
        status: level(usedPct),
        message: `${needs.inUse} connections in use on the server, ${Math.round(usedPct)} % of the ${needs.available} it allows (max_connections ${needs.maxConnections} minus reserved)${level(usedPct) === 'ok' ? '' : `: ${fix}`}`,
        details: { inUse: needs.inUse, available: needs.available, percent: Math.round(usedPct) },
      },
      {
        subject: 'fleet',
        status: level(fleetPct),
        message: `${live} live ${live === 1 ? 'process' : 'processes'} × ${needs.perProcess} connections (pool + listener) = ${fleet}, ${Math.round(fleetPct)} % of the ${needs.available} the server allows${level(fleetPct) === 'ok' ? '' : `: ${fix}`}`,
        details: { processes: live, perProcess: needs.perProcess, fleet, available: needs.available, percent: Math.round(fleetPct) },
      },
    ];
  },
};
