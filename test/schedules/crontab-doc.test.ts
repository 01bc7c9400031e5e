import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';
import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob } from '../../src/index.js';
import { defineSchedule, type ScheduleDefinition } from '../../src/schedules/define-schedule.js';
import { scheduleTick } from '../../src/schedules/schedule-set.js';
import { ticksBetween } from '../../src/schedules/ticks.js';

// The "From crontab to config" example of docs/schedules.md, run as written.
function loadDocExample(): { schedules: ScheduleDefinition[] } {
  const doc = readFileSync(fileURLToPath(new URL('../../docs/schedules.md', import.meta.url)), 'utf8');
  const block = /<!-- example: seed-crontab -->\s*```ts\n([\s\S]*?)```/.exec(doc);
  if (!block) throw new Error('example block not found in docs/schedules.md');
  const js = ts.transpileModule(block[1]!, { compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022 } }).outputText;
  const modules: Record<string, unknown> = { nightshift: { defineJob, defineSchedule }, zod: { z } };
  const exports: Record<string, unknown> = {};
  new Function('require', 'exports', js)((name: string) => modules[name], exports);
  return exports as { schedules: ScheduleDefinition[] };
}

describe('docs: from crontab to config', () => {
  const { schedules } = loadDocExample();
  const from = Date.parse('2026-02-28T23:50:00Z');
  const next = (name: string, n: number) => {
    const s = schedules.find((x) => x.name === name)!;
    return ticksBetween(s.timing, from, from + 40 * 86_400_000, n).map((x) => new Date(x).toISOString());
  };

  it('keeps every line of the crontab, in UTC', () => {
    expect(schedules.map((s) => [s.name, s.cron, s.tz])).toEqual([
      ['settle', '0 0 * * *', 'UTC'],
      ['recover-buy-intents', '*/2 * * * *', 'UTC'],
      ['resolve-pending-claims', '*/2 * * * *', 'UTC'],
      ['update-pot-sizes', '*/15 * * * *', 'UTC'],
      ['watchdog', '*/5 * * * *', 'UTC'],
      ['affiliate-bonus-night', '30 0 * * *', 'UTC'],
      ['affiliate-bonus-noon', '0 12 * * *', 'UTC'],
      ['re-engagement-email', '0 10 * * *', 'UTC'],
      ['leaderboard-bonus', '0 1 1 * *', 'UTC'],
    ]);
  });

  it('fires when the crontab did', () => {
    expect(next('settle', 2)).toEqual(['2026-03-01T00:00:00.000Z', '2026-03-02T00:00:00.000Z']);
    expect(next('recover-buy-intents', 2)).toEqual(['2026-02-28T23:52:00.000Z', '2026-02-28T23:54:00.000Z']);
    expect(next('update-pot-sizes', 2)).toEqual(['2026-03-01T00:00:00.000Z', '2026-03-01T00:15:00.000Z']);
    expect(next('watchdog', 2)).toEqual(['2026-02-28T23:55:00.000Z', '2026-03-01T00:00:00.000Z']);
    expect(next('affiliate-bonus-night', 1)).toEqual(['2026-03-01T00:30:00.000Z']);
    expect(next('affiliate-bonus-noon', 1)).toEqual(['2026-03-01T12:00:00.000Z']);
    expect(next('re-engagement-email', 1)).toEqual(['2026-03-01T10:00:00.000Z']);
    expect(next('leaderboard-bonus', 2)).toEqual(['2026-03-01T01:00:00.000Z', '2026-04-01T01:00:00.000Z']);
  });

  it('gives the settlement the id of the day that ended (seed: --dayId 20500 is 2026-02-16)', async () => {
    const settle = schedules.find((s) => s.name === 'settle')!;
    const tick = scheduleTick(settle, new Date('2026-02-17T00:00:00Z'), false);
    expect(await settle.payload!(tick)).toEqual({ dayId: 20500 });
    expect(settle).toMatchObject({ overlap: 'queue', catchUp: { policy: 'all', windowMs: 3 * 86_400_000 } });
  });
});
