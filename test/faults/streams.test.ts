import { describeWithRedis } from '../support/redis.js';
import { streamFaults } from './scenarios/stream-faults.js';
import { faultTests } from './support.js';

// Scenario 9, short: stream consumers SIGKILLed and redis-server SIGKILLed and restarted with
// appendfsync always: at-least-once loses nothing, at-most-once never handles a message twice.
describeWithRedis('faults: streams', () => {
  faultTests([streamFaults]);
});
