// A payment-manager pod (seed 002's src/server.ts): WORKER_ROLES (default api,outbox-worker)
// decides what it runs, through nightshift's roles — an unknown role (`outbox`, `psp-ipps`,
// `balance-monitor`: the seed's typical mistake) stops it with exit code 2 and the valid list. The
// API listens only with the `api` role. SIGTERM or SIGINT drains every pod, headless ones
// included: the API stops accepting, no new job is claimed, running jobs finish within the grace
// period (or are handed back), then the process exits 0.
import type { Server } from 'node:http';
import { createNightshift, isNightshiftError } from '../../src/index.js';
import { pmApi } from './api.js';
import { pmApp } from './app.js';
import { migratePm } from './store.js';

const app = pmApp(process.env);
const { settings } = app;
const ns = createNightshift({
  databaseUrl: process.env.DATABASE_URL,
  schema: settings.schema,
  ...app.definitions,
  ...app.worker,
  activeRoles: settings.roles,
});

try {
  ns.planRoles();
} catch (err) {
  if (isNightshiftError(err)) {
    process.stderr.write(`payment-manager: WORKER_ROLES="${process.env.WORKER_ROLES ?? ''}": ${err.message}\n`);
    process.exit(2);
  }
  throw err;
}

let server: Server | undefined;
let stopping: Promise<void> | undefined;
const stop = (signal: string) => {
  if (stopping) {
    process.stderr.write(`payment-manager: ${signal} again: exiting now\n`);
    process.exit(1);
  }
  process.stdout.write(`payment-manager ${process.pid}: ${signal}: draining (grace ${ns.options.shutdownGraceMs} ms)\n`);
  stopping = (async () => {
    await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
    await ns.stop();
    process.stdout.write(`payment-manager ${process.pid}: stopped\n`);
    process.exit(0);
  })();
};
process.on('SIGTERM', () => stop('SIGTERM'));
process.on('SIGINT', () => stop('SIGINT'));

await ns.migrate();
await migratePm(ns, settings.schema);
if (settings.roles.includes('api')) {
  server = pmApi(ns, app);
  await new Promise<void>((resolve) => server!.listen(settings.port, '127.0.0.1', resolve));
  const address = server.address();
  process.stdout.write(`payment-manager api on http://127.0.0.1:${typeof address === 'object' && address ? address.port : settings.port}\n`);
}
await ns.start();
process.stdout.write(`payment-manager ${process.pid} started: roles ${settings.roles.join(',')}\n`);
