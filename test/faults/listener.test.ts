import { describe } from 'vitest';
import { listenerFaults } from './scenarios/listener-faults.js';
import { faultTests } from './support.js';

describe('faults: listener', () => {
  faultTests([listenerFaults]);
});
