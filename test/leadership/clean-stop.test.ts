import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { EventBus } from '../../src/telemetry/events.js';
import { logEvents } from '../../src/telemetry/logger.js';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';

// A process that stops cleanly hands its leases back: its terms end with leader.deposed
// (`released`). That is news, not trouble — a warning there taught operators to ignore the one
// that matters (a term lost or expired: another process may be leading now).

const t = useTestDatabase('cleanstop');
t.migrateBeforeAll();

type Line = { level: number; event?: string; reason?: string; name?: string };
const INFO = 30;
const WARN = 40;

function capture(level = 'info') {
  const lines: Line[] = [];
  const logger = pino({ level }, { write: (s: string) => void lines.push(JSON.parse(s) as Line) });
  return { lines, logger };
}

describe('leader.deposed in the log', () => {
  it('a client that stops cleanly logs its released term at info, and no warning about it', async () => {
    const { lines, logger } = capture();
    const ns = t.client({ logger, maintenance: true, maintenanceIntervalMs: 100 });
    await ns.start();
    await waitFor('elected the maintenance leader', () => lines.some((l) => l.event === 'leader.elected'));
    await ns.stop();
    const deposed = lines.filter((l) => l.event === 'leader.deposed');
    expect(deposed.length).toBeGreaterThan(0);
    expect(deposed.map((l) => [l.reason, l.level])).toEqual(deposed.map(() => ['released', INFO]));
  });

  it('a term lost or expired is still a warning; a logger at warn leaves out the released one', () => {
    const bus = new EventBus();
    const { lines, logger } = capture();
    const off = logEvents(bus, logger);
    for (const reason of ['lost', 'expired', 'released'] as const) bus.emit({ type: 'leader.deposed', name: 'l', holder: 'h', token: '1', reason });
    off();
    expect(lines.map((l) => [l.reason, l.level])).toEqual([
      ['lost', WARN],
      ['expired', WARN],
      ['released', INFO],
    ]);

    const quiet = capture('warn');
    const offQuiet = logEvents(bus, quiet.logger);
    for (const reason of ['lost', 'released'] as const) bus.emit({ type: 'leader.deposed', name: 'l', holder: 'h', token: '1', reason });
    offQuiet();
    expect(quiet.lines.map((l) => l.reason)).toEqual(['lost']);
  });
});
