import type { SystemAdapter } from './system.js';

/**
 * Loads one system's adapter on demand, so a child process loads only the library it measures
 * (importing every adapter would put all three libraries into every worker's RSS).
 */
export async function loadSystem(id: string): Promise<SystemAdapter> {
  switch (id) {
    case 'nightshift':
      return (await import('./nightshift.js')).nightshiftAdapter;
    case 'nightshift-limited':
      return (await import('./nightshift.js')).nightshiftLimitedAdapter;
    case 'graphile-worker':
      return (await import('./graphile-worker.js')).graphileWorkerAdapter;
    case 'pg-boss':
      return (await import('./pg-boss.js')).pgBossAdapter;
    default:
      throw new Error(`unknown system "${id}"`);
  }
}
