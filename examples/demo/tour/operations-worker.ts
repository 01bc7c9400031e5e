// Seed 003, the operations worker (examples/operations-worker): its migrate.ts, then two
// `nightshift worker --roles operations-worker` processes of its config (OPS_FAST=1: the session
// digest every second), pushing to its fake Expo. The scripted step: a couple's packs change three
// times in a row through the SQL function queue_pack_change — one job, due 30 minutes after the
// last change (the debounce); a non-member's call is refused. The operator runs it now
// (`nightshift jobs run-now`), and the partner gets one push.
import { FakeExpo } from '../../operations-worker/fake-providers.js';
import { CLI, waitFor } from './fleet.js';
import { configOptions, guarded, type TourContext, type TourSystem } from './system.js';

const SCHEMA = 'operations_worker';
const CONFIG = 'examples/operations-worker/nightshift.config.ts';

/** Starts the operations worker: migrate, a couple, two workers. */
export async function startOperationsWorker(ctx: TourContext): Promise<TourSystem> {
  const expo = new FakeExpo();
  const env = { DATABASE_URL: ctx.databaseUrl, NS_SCHEMA: SCHEMA, OPS_FAST: '1', EXPO_URL: await expo.start() };
  const migrated = await ctx.fleet.run('operations-worker migrate', 'examples/operations-worker/migrate.ts', env);
  if (migrated.code !== 0) throw new Error(`operations-worker migrate.ts exited ${migrated.code}: ${migrated.output}`);
  const q = `"${SCHEMA}".`;
  await ctx.sql.query(`INSERT INTO ${q}ops_members VALUES ('c1', 'ann', 'tok-ann'), ('c1', 'bob', 'tok-bob')`);
  const workers = [1, 2].map((i) => ctx.fleet.start(`operations-worker ${i}`, CLI, env, ['--config', CONFIG, 'worker', '--roles', 'operations-worker']));
  await Promise.all(workers.map((w) => w.waitForLine('started')));

  const play = () =>
    guarded(async () => {
      const lines: string[] = [];
      const change = async (user: string) => (await ctx.sql.query(`SELECT ${q}queue_pack_change('c1', $1) AS id`, [user])).rows[0].id as string;
      const refused = await change('mallory').then(
        () => 'accepted (unexpected)',
        (err: Error & { code?: string }) => `refused (SQLSTATE ${err.code ?? '?'}: ${err.message})`,
      );
      lines.push(`queue_pack_change('c1', 'mallory'): ${refused}`);
      const ids = [await change('ann'), await change('bob'), await change('ann')];
      const jobs = (await ctx.sql.query(`SELECT id::text, run_at > now() + interval '25 minutes' AS later FROM ${q}jobs WHERE kind = 'pack-change'`)).rows as { id: string; later: boolean }[];
      lines.push(`three pack changes (ann, bob, ann) → job ids [${ids.join(', ')}]: ${jobs.length} job, due in ~30 minutes: ${jobs[0]?.later ? 'yes' : 'no'}`);
      const runNow = await ctx.fleet.run('operations-worker cli', CLI, env, ['--config', CONFIG, '--actor', 'tour', 'jobs', 'run-now', ids[0]!, '--reason', 'the tour does not wait 30 minutes']);
      if (runNow.code !== 0) throw new Error(`jobs run-now exited ${runNow.code}: ${runNow.output.trim()}`);
      await waitFor('the pack-change push', () => expo.messages.some((m) => m.data.kind === 'pack-change'));
      // The run's pushes are enqueued in one transaction with the job's completion: wait for it, then count.
      await waitFor('the pack-change job to complete', async () => (await ctx.sql.query(`SELECT state FROM ${q}jobs_all WHERE id = $1`, [ids[0]])).rows[0]?.state === 'completed');
      const pushes = expo.messages.filter((m) => m.data.kind === 'pack-change');
      lines.push(`run now: ${pushes.length} push, to ${pushes.map((m) => m.to).join(', ')} (the partner of the last to change), notification_id ${pushes[0]?.data.notification_id}`);
      const ok = refused.startsWith('refused') && new Set(ids).size === 1 && jobs.length === 1 && jobs[0]!.later && pushes.length === 1 && pushes[0]!.to === 'tok-bob';
      return { ok, lines };
    });

  const options = await configOptions('../../operations-worker/nightshift.config.ts', env, ctx.databaseUrl);
  return { dashboard: { id: 'operations-worker', title: 'operations-worker (seed 003): pushes, the session digest, debounced pack changes, the media janitor', options }, play, stop: () => expo.stop() };
}
