import type { AnyScenario } from '../harness/scenario.js';
import { daemonFailover } from './daemon-failover.js';
import { dedupeConcurrency } from './dedupe-concurrency.js';
import { limitsUnderFaults } from './limits-under-faults.js';
import { listenerFaults } from './listener-faults.js';
import { pausedWorker } from './paused-worker.js';
import { pgFailover } from './pg-failover.js';
import { pipelineFaults } from './pipeline-faults.js';
import { atLeastOnceUnderFaults, atMostOnceUnderFaults } from './queue-faults.js';
import { scheduleReplicas } from './schedule-replicas.js';
import { shutdownUnderLoad } from './shutdown-under-load.js';
import { streamFaults } from './stream-faults.js';

/** Every fault scenario, in the order `npm run faults` runs them. */
export const SCENARIOS: AnyScenario[] = [
  atLeastOnceUnderFaults,
  atMostOnceUnderFaults,
  pausedWorker,
  scheduleReplicas,
  daemonFailover,
  dedupeConcurrency,
  listenerFaults,
  shutdownUnderLoad,
  streamFaults,
  pgFailover,
  pipelineFaults,
  limitsUnderFaults,
];
