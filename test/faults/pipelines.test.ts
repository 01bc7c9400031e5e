import { describe } from 'vitest';
import { pipelineFaults } from './scenarios/pipeline-faults.js';
import { faultTests } from './support.js';

// Scenario 11, short: pipeline runs while workers are SIGKILLed mid-step and PostgreSQL restarts
// (a server of this file's own); every output recorded once, every run ends with its reason.
describe('faults: pipelines', () => {
  faultTests([pipelineFaults]);
});
