import { describe } from 'vitest';
import { pgFailover } from './scenarios/pg-failover.js';
import { faultTests } from './support.js';

// Scenario 10, short: a primary and its streaming standby (async, then remote_apply), workers
// through a proxy, the standby stalled, the primary SIGKILLed mid-drain, the standby promoted and
// the proxy re-pointed. Nothing lost either way; with remote_apply nothing acknowledged is undone.
describe('faults: PostgreSQL failover', () => {
  faultTests([pgFailover]);
});
