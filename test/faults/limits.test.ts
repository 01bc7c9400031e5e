import { describe } from 'vitest';
import { limitsUnderFaults } from './scenarios/limits-under-faults.js';
import { faultTests } from './support.js';

// Scenario 12, short: three workers × 20 on limited kinds, SIGKILLed, PostgreSQL restarted (a
// server of this file's own), backends terminated; an invariant per limit.
describe('flow-control limits under faults', () => {
  faultTests([limitsUnderFaults]);
});
