import { describe } from 'vitest';
import { scheduleReplicas } from './scenarios/schedule-replicas.js';
import { faultTests } from './support.js';

describe('faults: schedules', () => {
  faultTests([scheduleReplicas]);
});
