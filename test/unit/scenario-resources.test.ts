import { describe, expect, it } from 'vitest';
import { ScenarioResources } from '../faults/harness/resources.js';

// The fault harness's ending: what a scenario made is closed when the run ends, last made first,
// and one closer failing does not keep the others from running.

describe('ScenarioResources.closeAll', () => {
  it('closes everything, last made first, and runs every closer even when one fails', async () => {
    const r = new ScenarioResources('postgres://127.0.0.1:1/none', 'none');
    const closed: string[] = [];
    r.defer('the server', () => void closed.push('server'));
    r.defer('the pool', () => {
      closed.push('pool');
      throw new Error('pool already ended');
    });
    r.defer('the client', async () => void closed.push('client'));
    await expect(r.closeAll()).rejects.toThrow('closing the pool: Error: pool already ended');
    expect(closed).toEqual(['client', 'pool', 'server']);
  });

  it('closes each thing once: a second closeAll has nothing left to do', async () => {
    const r = new ScenarioResources('postgres://127.0.0.1:1/none', 'none');
    let closes = 0;
    r.defer('a proxy', () => void closes++);
    await r.closeAll();
    await r.closeAll();
    expect(closes).toBe(1);
  });
});
