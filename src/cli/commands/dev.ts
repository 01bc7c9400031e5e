import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, watch, type FSWatcher } from 'node:fs';
import { join, relative, resolve } from 'node:path';
import { Option, type Command } from 'commander';
import { CONFIG_FILES } from '../../config/load-config.js';
import { createDashboard, serveDashboard } from '../../dashboard/index.js';
import { localImports } from '../../dev/local-imports.js';
import { openProjectPostgres, type ProjectPostgres } from '../../dev/project-postgres.js';
import { PortUnavailableError } from '../../errors.js';
import type { Nightshift } from '../../index.js';
import { parseRoles } from '../../roles/role-plan.js';
import type { CliRun, TextSink } from '../cli-io.js';
import { cliContext, type GlobalOptions } from '../context.js';
import { EXIT, UsageError } from '../exit-codes.js';
import { intFlag } from '../parse.js';

/**
 * A part of the dev fleet served beside the workers, on 127.0.0.1 only like everything dev starts.
 * Parts start after the client and stop before it.
 */
export interface DevPart {
  readonly name: string;
  /** Starts the part for a started client; resolves with a line to print (its URL), if any. */
  start(ns: Nightshift): Promise<{ stop(): Promise<void>; line?: string }>;
}

/** The parts `nightshift dev` runs besides the workers: the dashboard, on 127.0.0.1:4000 (a free port when that one is taken). */
export const DEV_PARTS: DevPart[] = [
  {
    name: 'dashboard',
    start: async (ns) => {
      const dashboard = createDashboard(ns, { logger: ns.logger });
      const server = await serveDashboard(dashboard, { port: 4_000, host: '127.0.0.1' }).catch((err: unknown) => {
        if (!(err instanceof PortUnavailableError)) throw err;
        return serveDashboard(dashboard, { port: 0, host: '127.0.0.1' });
      });
      return { stop: () => server.close(), line: server.url };
    },
  },
];

interface DevOptions {
  roles?: string;
  pgPort?: string;
  watch: boolean;
  /** Internal: run the app (the child process of the supervising `dev`). */
  app?: string;
}

/**
 * `nightshift dev`: local development in one command. An embedded PostgreSQL kept in
 * `.nightshift/` of the working directory (created on the first run, reused after), migrations
 * applied, every role of the config running with human-readable logs, and a restart whenever the
 * config file or a project file it imports changes. Ctrl-C stops the app (jobs handed back), then
 * PostgreSQL. `--database-url` uses that database instead of the embedded one.
 *
 * Two processes: this one supervises (PostgreSQL, the file watch, signals) and runs the app in a
 * child process, started afresh on each change, so every edited file is loaded again — a module
 * loaded once stays loaded in a Node process.
 */
export function registerDev(program: Command, run: CliRun): void {
  program
    .command('dev')
    .description('run the whole app locally: embedded PostgreSQL in .nightshift/, every role, readable logs, restart on config changes')
    .option('--roles <list>', 'comma-separated roles to run (default: everything)')
    .option('--pg-port <n>', 'port of the embedded PostgreSQL (default: the last one, else a free one)')
    .option('--no-watch', 'do not restart when the config changes')
    .addOption(new Option('--app <generation>', 'run the app (internal: the child of nightshift dev)').hideHelp())
    .action(async (opts: DevOptions, cmd: Command) => {
      const g = cmd.optsWithGlobals<GlobalOptions>();
      run.exitCode = opts.app !== undefined ? await runApp(run, g, opts) : await supervise(run, g, opts);
    });
}

/** The app of one generation: the config loaded afresh, migrated, every role started, until the supervisor says stop. */
async function runApp(run: CliRun, g: GlobalOptions, opts: DevOptions): Promise<number> {
  const logger = run.logger({ pretty: true, level: run.env.NIGHTSHIFT_LOG_LEVEL ?? 'debug' });
  const ctx = await cliContext(run, g);
  const roles = parseRoles(opts.roles ?? run.env.NIGHTSHIFT_ROLES);
  const ns = ctx.client({
    worker: true,
    ...(roles ? { roles } : {}),
    // A short grace: a restart should not wait 25 s for a slow job in development.
    overrides: { logger: ctx.loaded.config.logger ?? logger, shutdownGraceMs: ctx.loaded.config.worker?.shutdownGraceMs ?? 5_000 },
  });
  const parts: { stop(): Promise<void> }[] = [];
  let stopping: Promise<number> | undefined;
  const stop = () =>
    (stopping ??= (async () => {
      for (const p of parts.reverse()) await p.stop().catch(() => undefined);
      await ns.stop();
      return EXIT.ok;
    })());
  // The supervisor sends SIGTERM (a stop request); one that died closes the channel. Either way
  // the app drains once: a second request changes nothing.
  const offs: (() => void)[] = [];
  const stopped = new Promise<number>((resolve) => {
    offs.push(
      run.stops.listen(() => void stop().then(resolve)),
      run.onParentGone(() => void stop().then(resolve)),
    );
  }).finally(() => offs.forEach((off) => off()));
  try {
    const m = await ns.migrate();
    if (m.applied.length > 0) logger.info(`dev: migrated schema "${m.schema}" to ${m.to}`);
    await ns.start();
    for (const part of DEV_PARTS) {
      const started = await part.start(ns);
      parts.push(started);
      if (started.line) logger.info(`dev: ${part.name}: ${started.line}`);
    }
    const plan = ns.planRoles();
    const generation = Number(opts.app);
    logger.info(
      `dev: ${generation > 1 ? 'restarted' : 'started'} (#${generation}): roles ${plan.roles.join(',')}; queues ${ns.workedQueues.join(',') || '(none)'}; ` +
        `schedules ${plan.schedules.join(',') || '(none)'}; daemons ${plan.daemons.join(',') || '(none)'}`,
    );
  } catch (err) {
    // Asked to stop while starting (a restart during start-up): the stop is the outcome, not the error.
    if (stopping) return stopped;
    offs.forEach((off) => off());
    await stop().catch(() => undefined);
    throw err;
  }
  return stopped;
}

/** Where the app's output goes: a sink with a file descriptor (the terminal) is handed to the child as is, any other gets it piped in. */
function childStdio(sink: TextSink): number | 'pipe' {
  return typeof sink.fd === 'number' ? sink.fd : 'pipe';
}

/** PostgreSQL, the app's child process (restarted on changes), and the stop requests. */
async function supervise(run: CliRun, g: GlobalOptions, opts: DevOptions): Promise<number> {
  const cwd = run.cwd;
  const roles = parseRoles(opts.roles ?? run.env.NIGHTSHIFT_ROLES);
  const pgPort = intFlag('pg-port', opts.pgPort);
  if (pgPort !== undefined && (pgPort < 1 || pgPort > 65_535)) throw new UsageError('--pg-port must be from 1 to 65535');
  const logger = run.logger({ pretty: true, level: run.env.NIGHTSHIFT_LOG_LEVEL ?? 'debug' });
  const say = (msg: string) => logger.info(`dev: ${msg}`);
  const configPath = g.config ? resolve(cwd, g.config) : CONFIG_FILES.map((f) => resolve(cwd, f)).find((f) => existsSync(f));
  if (g.config && !existsSync(configPath!)) throw new UsageError(`no such config file: ${configPath}`);

  let pg: ProjectPostgres | undefined;
  let url = g.databaseUrl ?? '';
  if (!url) {
    pg = await openProjectPostgres(join(cwd, '.nightshift'), {
      ...(pgPort !== undefined ? { port: pgPort } : {}),
      log: (line) => logger.trace({ postgres: line }, 'postgres'),
      note: say,
    });
    url = pg.url;
    say(`PostgreSQL ${pg.created ? 'created' : 'reused'} in ${relative(cwd, pg.dataDir)} (pid ${pg.pid}); DATABASE_URL=${pg.url}`);
  }

  const args = [
    ...run.self.args,
    ...(g.config ? ['--config', g.config] : []),
    ...(g.schema ? ['--schema', g.schema] : []),
    ...(g.actor ? ['--actor', g.actor] : []),
    'dev',
    ...(roles ? ['--roles', roles.join(',')] : []),
  ];
  let child: ChildProcess | undefined;
  let exited: Promise<void> = Promise.resolve();
  let generation = 0;
  let watchers: FSWatcher[] = [];
  let chain: Promise<void> = Promise.resolve();
  let stopping = false;

  const startApp = () => {
    generation++;
    // Its own process group: a Ctrl-C in the terminal reaches this process, which stops the app first.
    const c = spawn(run.self.command, [...args, '--app', String(generation)], {
      cwd,
      detached: true,
      stdio: ['ignore', childStdio(run.out), childStdio(run.err), 'ipc'],
      // The URL goes by environment, not on a command line other users can list.
      env: { ...run.env, DATABASE_URL: url },
    });
    c.stdout?.on('data', (chunk: Buffer) => run.out.write(chunk.toString()));
    c.stderr?.on('data', (chunk: Buffer) => run.err.write(chunk.toString()));
    child = c;
    exited = new Promise((done) =>
      c.once('exit', (code, signal) => {
        if (child === c) child = undefined;
        if (!stopping && (code !== 0 || signal)) say(`the app exited (${signal ?? `code ${code}`}); waiting for a change to start it again`);
        done();
      }),
    );
    watchFiles();
  };

  const stopApp = async () => {
    const c = child;
    if (c && c.exitCode === null && c.signalCode === null) c.kill('SIGTERM');
    await exited;
  };

  const watchFiles = () => {
    for (const w of watchers) w.close();
    watchers = [];
    if (!opts.watch || !configPath) return;
    let timer: NodeJS.Timeout | undefined;
    for (const file of localImports(configPath, cwd)) {
      try {
        const w = watch(file, () => {
          // Editors write a file in several steps: one restart for the burst.
          clearTimeout(timer);
          timer = setTimeout(() => restart(`${relative(cwd, file)} changed`), 150);
        });
        w.on('error', () => undefined);
        watchers.push(w);
      } catch {
        // Gone between the scan and the watch; the next scan lists the files again.
      }
    }
  };

  const restart = (why: string) => {
    if (stopping) return;
    chain = chain.then(async () => {
      if (stopping) return;
      say(`${why}: restarting`);
      await stopApp();
      if (!stopping) startApp();
    });
  };

  // Whatever ends this process, the app goes with it.
  const killChild = () => child?.kill('SIGKILL');
  process.once('exit', killChild);
  let off: () => void = () => undefined;
  const done = new Promise<number>((resolveDone) => {
    off = run.stops.listen((reason, nth) => {
      if (nth > 1) {
        say(`${reason} again: killing the app and stopping PostgreSQL now`);
        child?.kill('SIGKILL');
        void (pg?.stop() ?? Promise.resolve()).finally(() => resolveDone(EXIT.failed));
        return;
      }
      stopping = true;
      say(`${reason}: stopping the app, then PostgreSQL…`);
      void (async () => {
        for (const w of watchers) w.close();
        await chain.catch(() => undefined);
        await stopApp();
        await pg?.stop();
        say('stopped');
        resolveDone(EXIT.ok);
      })();
    });
  });

  startApp();
  const code = await done;
  off();
  process.off('exit', killChild);
  return code;
}
