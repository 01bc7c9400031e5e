import { readdirSync, readFileSync } from 'node:fs';

const TICK_US = 1e6 / 100; // USER_HZ on Linux

/**
 * CPU time (user + system, µs) of every `postgres` process now alive on this machine, from
 * /proc/<pid>/stat: the database's side of a measure when its server is local (the bench's
 * embedded one) and nothing else runs PostgreSQL here. NaN where /proc cannot tell (not Linux, or
 * no postgres process visible: a remote DATABASE_URL). Processes that exited in between are lost,
 * so take it around work done by long-lived backends (a pool's connections).
 */
export function databaseCpuUs(): number {
  let ticks = 0;
  let seen = 0;
  let pids: string[];
  try {
    pids = readdirSync('/proc');
  } catch {
    return NaN;
  }
  for (const pid of pids) {
    if (!/^\d+$/.test(pid)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    } catch {
      continue; // gone
    }
    const close = stat.lastIndexOf(')');
    if (stat.slice(stat.indexOf('(') + 1, close) !== 'postgres') continue;
    const f = stat.slice(close + 2).split(' ');
    ticks += Number(f[11]) + Number(f[12]); // fields 14 and 15: utime, stime
    seen++;
  }
  return seen === 0 ? NaN : ticks * TICK_US;
}
