import { describe } from 'vitest';
import { atLeastOnceUnderFaults, atMostOnceUnderFaults } from './scenarios/queue-faults.js';
import { faultTests } from './support.js';

// Scenarios 1 and 2, short: workers SIGKILLed, PostgreSQL restarted (a server of this file's own),
// backends terminated, clocks skewed; nothing lost, duplicates only where a fault hit.
describe('jobs under faults', () => {
  faultTests([atLeastOnceUnderFaults, atMostOnceUnderFaults]);
});
