import { describe } from 'vitest';
import { daemonFailover } from './scenarios/daemon-failover.js';
import { faultTests } from './support.js';

describe('faults: daemons', () => {
  faultTests([daemonFailover]);
});
