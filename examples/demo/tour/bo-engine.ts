// Seed 000/001, the lottery back office (examples/bo-engine): two worker processes of its
// nightshift.config.ts (fast cadences, BO_FAST=1), and the scripted settlement of one day — pool 3's
// transaction reverts (an injected fault row, as the example's test does), the run fails and
// alerts; the cause is fixed and `nightshift pipelines rerun` repeats only that pool.
import { mkdtempSync } from 'node:fs';
import { createServer } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { boTables } from '../../bo-engine/tables.js';
import { CLI, waitFor } from './fleet.js';
import { configOptions, guarded, type TourContext, type TourSystem } from './system.js';

const SCHEMA = 'bo_engine';
const CONFIG = 'examples/bo-engine/nightshift.config.ts';
const DAY_MS = 86_400_000;

/** A stand-in for the Telegram Bot API on loopback: seed 000's alerts go there; it keeps their first lines. */
async function fakeTelegram(token: string) {
  const texts: string[] = [];
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c.toString()));
    req.on('end', () => {
      if (req.url !== `/bot${token}/sendMessage`) return void res.writeHead(404).end('{"ok":false}');
      texts.push(String((JSON.parse(body) as { text?: string }).text ?? '').split('\n')[0]!);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"ok":true,"result":{"message_id":1}}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const a = server.address();
  const url = `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`;
  return { url, texts, close: () => new Promise<void>((resolve) => (server.closeAllConnections(), server.close(() => resolve()))) };
}

/** Starts the bo-engine: migrate, its tables, two workers. */
export async function startBoEngine(ctx: TourContext): Promise<TourSystem> {
  const token = '4242:nightshift-tour';
  const telegram = await fakeTelegram(token);
  const env = {
    TELEGRAM_BOT_TOKEN: token,
    TELEGRAM_CHAT_ID: '-1001',
    TELEGRAM_API_URL: telegram.url,
    DATABASE_URL: ctx.databaseUrl,
    NS_SCHEMA: SCHEMA,
    BO_FAST: '1',
    BO_SETTLE_MS: '300',
    BO_ARTIFACTS: mkdtempSync(join(tmpdir(), 'nightshift-tour-artifacts-')),
  };
  const cli = async (...args: string[]) => {
    const r = await ctx.fleet.run('bo-engine cli', CLI, env, ['--config', CONFIG, '--actor', 'tour', ...args]);
    if (r.code !== 0) throw new Error(`nightshift ${args.join(' ')} exited ${r.code}: ${r.output.trim()}`);
    return r.output;
  };
  await cli('migrate');
  await ctx.sql.query(boTables(`"${SCHEMA}"`));
  const workers = [1, 2].map((i) => ctx.fleet.start(`bo-engine worker ${i}`, CLI, env, ['--config', CONFIG, 'worker']));
  await Promise.all(workers.map((w) => w.waitForLine('started')));

  const q = `"${SCHEMA}".`;
  const one = async <T>(text: string, values: unknown[] = []) => (await ctx.sql.query(text, values)).rows[0] as T | undefined;
  // A day a week back: outside the settle schedule's 3-day catch-up, so the script owns its run.
  const day = String(Math.floor(Date.now() / DAY_MS) - 8);
  const run = () => one<{ state: string; reason: string | null }>(`SELECT state, reason FROM ${q}pipeline_runs WHERE pipeline = 'settlement' AND key = $1 AND NOT dry_run`, [day]);
  const attempts = async () => (await ctx.sql.query(`SELECT pool FROM ${q}bo_settle_attempts WHERE day_id = $1 ORDER BY at`, [day])).rows.map((r: { pool: number }) => r.pool);

  const play = () =>
    guarded(async () => {
      const lines: string[] = [];
      // The fault: pool 3's settlement transaction reverts until the row is removed.
      await ctx.sql.query(`INSERT INTO ${q}bo_faults (day_id, pool) VALUES ($1, 3)`, [day]);
      await cli('pipelines', 'start', 'settlement', day, '--reason', 'the scripted day');
      const failed = await waitFor('the settlement to fail', async () => ((await run())?.state === 'failed' ? run() : undefined), 120_000);
      lines.push(`settlement of day ${day}: failed — ${failed!.reason ?? ''}`.trim());
      // The other pools finish (they were already running) before the rerun chooses what to repeat.
      await waitFor(
        'the other pools to finish',
        async () =>
          (
            await one<{ n: number }>(`SELECT count(*)::int AS n FROM ${q}pipeline_steps s JOIN ${q}pipeline_runs r ON r.id = s.run_id WHERE r.key = $1 AND s.item <> '' AND s.state IN ('ready', 'running')`, [
              day,
            ])
          )?.n === 0,
      );
      const alert = await waitFor('the failure alert', () => one<{ reason: string }>(`SELECT reason FROM ${q}bo_alerts WHERE day_id = $1`, [day]));
      lines.push(`the onFailure alert job ran: "${alert.reason.slice(0, 60)}…"`);
      const before = (await attempts()).length;
      await ctx.sql.query(`DELETE FROM ${q}bo_faults WHERE day_id = $1`, [day]);
      await cli('pipelines', 'rerun', 'settlement', day, '--reason', 'rpc fixed');
      await waitFor('the rerun to settle the day', async () => (await run())?.state === 'succeeded', 120_000);
      const repeated = (await attempts()).slice(before);
      lines.push(`rerun after the fix: succeeded; pools settled again: [${repeated.join(', ')}] (the other four kept their recorded results)`);
      const payouts = await one<{ n: number }>(`SELECT count(*)::int AS n FROM ${q}bo_payouts WHERE day_id = $1 AND NOT dry_run`, [day]);
      lines.push(`payouts recorded: ${payouts?.n ?? 0} of 5 pools, each once`);
      return { ok: repeated.length === 1 && repeated[0] === 3 && payouts?.n === 5, lines };
    });

  const options = await configOptions(`../../bo-engine/nightshift.config.ts`, env, ctx.databaseUrl);
  return { dashboard: { id: 'bo-engine', title: 'bo-engine (seed 000/001): schedules, the refresh-seeds daemon, the settlement pipeline, checks', options }, play, stop: telegram.close };
}
