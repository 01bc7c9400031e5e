import type { DashboardPage } from '../page.js';
import { alertsPage } from './alerts.js';
import { auditPage } from './audit.js';
import { budgetPage } from './budget.js';
import { bulkPage } from './bulk.js';
import { jobPage } from './job.js';
import { jobsPage } from './jobs.js';
import { leadersPage } from './leaders.js';
import { limitsPage } from './limits.js';
import { overviewPage } from './overview.js';
import { pipelineRunPage } from './pipeline-run.js';
import { pipelinesPage } from './pipelines.js';
import { processesPage } from './processes.js';
import { queuesPage } from './queues.js';
import { schedulesPage } from './schedules.js';
import { streamsPage } from './streams.js';

/**
 * The built-in pages, in navigation order. The set is a registry: a part that brings its own
 * admin API (pipelines, alerts, limits) adds its page here, and users add theirs with the
 * `pages` option.
 */
export function builtInPages(): DashboardPage[] {
  return [overviewPage, jobsPage, jobPage, bulkPage, queuesPage, limitsPage, schedulesPage, leadersPage, processesPage, streamsPage, pipelinesPage, pipelineRunPage, alertsPage, auditPage, budgetPage];
}
