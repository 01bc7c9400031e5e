// Seed 002 (the payment manager) for the nightshift CLI: `nightshift --config
// examples/payment-manager/nightshift.config.ts jobs resolve <id> --as completed --reason …` and
// the rest of the operator's commands. The pods themselves run server.ts, which reads
// WORKER_ROLES; `nightshift worker --roles …` runs the same roles (without the HTTP API).
import { defineConfig } from '../../src/index.js';
import { pmApp } from './app.js';

const app = pmApp(process.env);

export default defineConfig({
  database: { schema: app.settings.schema },
  ...app.definitions,
  worker: app.worker,
});
