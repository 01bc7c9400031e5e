import { graphileWorkerAdapter } from './graphile-worker.js';
import { nightshiftAdapter, nightshiftLimitedAdapter } from './nightshift.js';
import { pgBossAdapter } from './pg-boss.js';
import type { SystemAdapter } from './system.js';

/** Every system the benchmark knows, nightshift first. */
export const SYSTEMS: readonly SystemAdapter[] = [nightshiftAdapter, nightshiftLimitedAdapter, graphileWorkerAdapter, pgBossAdapter];

/** Looks a system up by id. */
export function systemById(id: string): SystemAdapter {
  const s = SYSTEMS.find((x) => x.id === id);
  if (!s) throw new Error(`unknown system "${id}"; known: ${SYSTEMS.map((x) => x.id).join(', ')}`);
  return s;
}
