import { describe, expect, it } from 'vitest';
import { ConfigError } from '../../src/errors.js';
import { defineDaemon, type DaemonOptions } from '../../src/leadership/define-daemon.js';

function problems(fn: () => unknown): { path: string; message: string }[] {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ConfigError);
    expect((err as ConfigError).code).toBe('NS_CONFIG_INVALID');
    return [...(err as ConfigError).issues];
  }
  throw new Error('expected NS_CONFIG_INVALID, nothing was thrown');
}

describe('defineDaemon', () => {
  it('returns a frozen definition with its defaults', () => {
    const run = async () => undefined;
    const d = defineDaemon({ name: 'refresh-seeds', run, everyMs: 30_000, requiredEnv: ['RPC_URL'] });
    expect(d).toEqual({ name: 'refresh-seeds', run, everyMs: 30_000, ttlMs: undefined, requiredEnv: ['RPC_URL'] });
    expect(Object.isFrozen(d)).toBe(true);
    expect(defineDaemon({ name: 'loop', run }).requiredEnv).toEqual([]);
  });

  it('reports every problem at once, with a did-you-mean for a misspelt option', () => {
    const issues = problems(() =>
      defineDaemon({
        name: 'bad name!',
        run: 5,
        everyMs: -1,
        ttlMs: 10,
        requiredEnv: ['OK_NAME', '1BAD'],
        evryMs: 5,
      } as unknown as DaemonOptions),
    );
    expect(issues.map((i) => i.path).sort()).toEqual(['everyMs', 'evryMs', 'name', 'requiredEnv.1', 'run', 'ttlMs']);
    expect(issues.find((i) => i.path === 'evryMs')!.message).toContain('did you mean "everyMs"');
    expect(issues.find((i) => i.path === 'name')!.message).toContain('not allowed');
  });

  it('rejects a missing definition and a non-array requiredEnv', () => {
    expect(problems(() => defineDaemon(undefined as unknown as DaemonOptions)).map((i) => i.path)).toEqual(['', 'name', 'run']);
    expect(problems(() => defineDaemon({ name: 'x', run: () => undefined, requiredEnv: 'RPC_URL' as unknown as string[] })).map((i) => i.path)).toEqual(['requiredEnv']);
  });
});
