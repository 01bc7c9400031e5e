import { describe, expect, it } from 'vitest';
import { StoppedError } from '../../src/errors.js';
import { sleep } from '../../src/lifecycle/clock.js';
import { PeriodicTask } from '../../src/lifecycle/periodic.js';
import { liveResources } from '../../src/lifecycle/resources.js';
import { BaseService, ServiceGroup, type Service } from '../../src/lifecycle/service.js';
import { ManualClock, settle } from './manual-clock.js';

/** A service that records what it was asked to do, and can be told to fail or to wait. */
class Probe extends BaseService {
  readonly calls: string[] = [];
  failStart: Error | undefined;
  failStop: Error | undefined;
  gate: Promise<void> | undefined;

  constructor(name: string, log?: string[], restartable = false) {
    super({ name, kind: 'probe', restartable });
    if (log) this.calls = log;
  }

  protected async onStart(): Promise<void> {
    this.calls.push(`start ${this.name}`);
    await this.gate;
    if (this.failStart) throw this.failStart;
  }

  protected onStop(): void {
    this.calls.push(`stop ${this.name}`);
    if (this.failStop) throw this.failStop;
  }

  /** The base's `live`, for the test. */
  get isLive(): boolean {
    return this.live;
  }
}

const probes = () => liveResources().filter((r) => r.kind === 'probe');

describe('BaseService: one lifecycle for every long-lived part', () => {
  it('stop before start is safe, twice; a start after it is refused with NS_STOPPED', async () => {
    const s = new Probe('a');
    await s.stop();
    await s.stop();
    expect(s.state).toBe('stopped');
    await expect(s.start()).rejects.toBeInstanceOf(StoppedError);
    expect(s.calls).toEqual([]);
  });

  it('start twice (also at once) starts once; stop twice stops once; it is live only in between', async () => {
    const s = new Probe('a');
    await Promise.all([s.start(), s.start()]);
    await s.start();
    expect(s.state).toBe('running');
    expect(s.isLive).toBe(true);
    expect(probes().map((r) => r.label)).toEqual(['a']);
    await Promise.all([s.stop(), s.stop()]);
    await s.stop();
    expect(s.calls).toEqual(['start a', 'stop a']);
    expect(s.isLive).toBe(false);
    expect(probes()).toEqual([]);
    await expect(s.start()).rejects.toMatchObject({ code: 'NS_STOPPED' });
  });

  it('a failed start stops what it began, goes back to idle and throws; stop is then a no-op and start may be tried again', async () => {
    const s = new Probe('a');
    s.failStart = new Error('no database');
    await expect(s.start()).rejects.toThrow('no database');
    expect(s.calls).toEqual(['start a', 'stop a']);
    expect(s.state).toBe('idle');
    expect(probes()).toEqual([]);
    s.failStart = undefined;
    await s.start();
    expect(s.state).toBe('running');
    await s.stop();
    expect(s.calls).toEqual(['start a', 'stop a', 'start a', 'stop a']);
  });

  it('a stop during the start waits for the start, then stops; loops see they should end', async () => {
    const s = new Probe('a');
    let open!: () => void;
    s.gate = new Promise((r) => (open = r));
    const started = s.start();
    await settle();
    expect(s.state).toBe('starting');
    const stopped = s.stop();
    expect(s.isLive).toBe(false);
    open();
    await started;
    await stopped;
    expect(s.calls).toEqual(['start a', 'stop a']);
    expect(s.state).toBe('stopped');
  });

  it('a restartable service starts again after a stop (a start during the stop waits for it)', async () => {
    const s = new Probe('a', undefined, true);
    await s.stop();
    expect(s.state).toBe('idle');
    await s.start();
    const stopping = s.stop();
    const again = s.start();
    await stopping;
    await again;
    expect(s.state).toBe('running');
    await s.stop();
    expect(s.calls).toEqual(['start a', 'stop a', 'start a', 'stop a']);
  });
});

describe('ServiceGroup: an ordered list of services', () => {
  const group = (names: string[]) => {
    const log: string[] = [];
    const parts = names.map((n) => new Probe(n, log));
    return { log, parts, group: new ServiceGroup('host', parts) };
  };

  it('starts in order and stops in reverse', async () => {
    const { log, group: g } = group(['listener', 'worker', 'registry']);
    await g.start();
    await g.stop();
    expect(log).toEqual(['start listener', 'start worker', 'start registry', 'stop registry', 'stop worker', 'stop listener']);
    expect(probes()).toEqual([]);
  });

  it('a failure part-way stops what had started, in reverse, starts nothing after it, and throws the failure', async () => {
    const { log, parts, group: g } = group(['listener', 'worker', 'ticker', 'registry']);
    parts[2]!.failStart = new Error('bad schedule payload');
    await expect(g.start()).rejects.toThrow('bad schedule payload');
    expect(log).toEqual(['start listener', 'start worker', 'start ticker', 'stop ticker', 'stop worker', 'stop listener']);
    expect(parts.map((p) => p.state)).toEqual(['stopped', 'stopped', 'stopped', 'idle']);
    expect(g.state).toBe('idle');
    expect(probes()).toEqual([]);
    await g.stop();
  });

  it('a part that fails to stop does not keep the others running; its error is thrown at the end', async () => {
    const { log, parts, group: g } = group(['listener', 'worker', 'registry']);
    await g.start();
    parts[1]!.failStop = new Error('worker stuck');
    await expect(g.stop()).rejects.toThrow('worker stuck');
    expect(log.slice(3)).toEqual(['stop registry', 'stop worker', 'stop listener']);
    expect(probes()).toEqual([]);
  });

  it('takes any Service, not only BaseService subclasses', async () => {
    const log: string[] = [];
    const plain: Service = { name: 'plain', start: async () => void log.push('start plain'), stop: async () => void log.push('stop plain') };
    const g = new ServiceGroup('host', [plain, new Probe('worker', log)]);
    await g.start();
    await g.stop();
    expect(log).toEqual(['start plain', 'start worker', 'stop worker', 'stop plain']);
  });
});

describe('PeriodicTask on a clock the test moves', () => {
  it('runs every interval, first at once with runFirst, never overlapping itself; stop waits for the run in progress and leaves no timer', async () => {
    const clock = new ManualClock();
    const runs: number[] = [];
    let finish: (() => void) | undefined;
    const task = new PeriodicTask({
      name: 'rescue',
      intervalMs: 1_000,
      jitter: 0,
      runFirst: true,
      clock,
      onError: () => undefined,
      task: async () => {
        runs.push(clock.monotonic());
        if (runs.length === 3) await new Promise<void>((r) => (finish = r));
      },
    });
    await task.start();
    await clock.advance(2_500);
    // At 0 (runFirst), then one interval after each run ended.
    expect(runs).toEqual([0, 1_000, 2_000]);
    // The third run hangs: no timer is armed meanwhile, so nothing overlaps it.
    await clock.advance(5_000);
    expect(runs).toEqual([0, 1_000, 2_000]);
    expect(clock.pending).toBe(0);
    let stopped = false;
    const stopping = task.stop().then(() => (stopped = true));
    await settle();
    expect(stopped).toBe(false);
    finish!();
    await stopping;
    expect(clock.pending).toBe(0);
    await clock.advance(10_000);
    expect(runs).toHaveLength(3);
  });

  it('an error goes to onError and the loop carries on; it may be started again after a stop', async () => {
    const clock = new ManualClock();
    const errors: unknown[] = [];
    let n = 0;
    const task = new PeriodicTask({
      name: 'prune',
      intervalMs: 100,
      jitter: 0,
      clock,
      onError: (err) => errors.push(err),
      task: async () => {
        if (++n === 1) throw new Error('database down');
      },
    });
    await task.start();
    await clock.advance(250);
    expect(n).toBe(2);
    expect(errors).toHaveLength(1);
    await task.stop();
    await clock.advance(1_000);
    expect(n).toBe(2);
    await task.start();
    await clock.advance(100);
    expect(n).toBe(3);
    await task.stop();
  });

  it('sleep ends when its time has passed on the clock, or at once when its signal aborts', async () => {
    const clock = new ManualClock();
    let done = false;
    const slept = sleep(clock, 500).then(() => (done = true));
    await clock.advance(499);
    expect(done).toBe(false);
    await clock.advance(1);
    await slept;
    const controller = new AbortController();
    const cut = sleep(clock, 60_000, controller.signal);
    controller.abort();
    await cut;
    expect(clock.pending).toBe(0);
  });
});
