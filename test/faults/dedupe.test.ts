import { describe } from 'vitest';
import { dedupeConcurrency } from './scenarios/dedupe-concurrency.js';
import { faultTests } from './support.js';

describe('faults: dedupe', () => {
  faultTests([dedupeConcurrency]);
});
