import { describe } from 'vitest';
import { shutdownUnderLoad } from './scenarios/shutdown-under-load.js';
import { faultTests } from './support.js';

describe('faults: shutdown', () => {
  faultTests([shutdownUnderLoad]);
});
