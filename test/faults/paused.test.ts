import { describe } from 'vitest';
import { pausedWorker } from './scenarios/paused-worker.js';
import { faultTests } from './support.js';

describe('faults: paused', () => {
  faultTests([pausedWorker]);
});
