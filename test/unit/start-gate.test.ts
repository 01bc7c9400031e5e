import { describe, expect, it } from 'vitest';
import { StartGate } from '../../src/worker/start-gate.js';

// The order of starts recorded before their handlers: a suspect (a job lost unstarted too often,
// which may kill its process at once) records its start alone, never while another recorded
// start waits for its handler to be called, and nothing else is recorded while its window is open.

/** Settles whatever promise callbacks are queued (the gate resolves through promises only). */
const settle = () => new Promise<void>((r) => setImmediate(r));

describe('StartGate', () => {
  it('lets starts through at once when no suspect is about', async () => {
    const gate = new StartGate();
    const passes = await Promise.all([gate.shared(), gate.shared(), gate.shared()]);
    expect(passes).toHaveLength(3);
  });

  it('opens a suspect’s window only once every start let through had its handler called', async () => {
    const gate = new StartGate();
    const a = await gate.shared();
    const b = await gate.shared();
    let opened = false;
    const suspect = gate.exclusive().then((pass) => ((opened = true), pass));
    await settle();
    expect(opened).toBe(false);
    a();
    await settle();
    expect(opened).toBe(false);
    b();
    await settle();
    expect(opened).toBe(true);
    (await suspect)();
  });

  it('holds other starts, and the next suspect, while a suspect’s window is open; the next suspect then waits for those starts', async () => {
    const gate = new StartGate();
    const first = await gate.exclusive();
    const order: string[] = [];
    const other = gate.shared().then((pass) => (order.push('other'), pass));
    const second = gate.exclusive().then((pass) => (order.push('second suspect'), pass));
    await settle();
    expect(order).toEqual([]);
    first();
    await settle();
    // The other start (queued first) goes; the second suspect waits until its handler is called.
    expect(order).toEqual(['other']);
    (await other)();
    await settle();
    expect(order).toEqual(['other', 'second suspect']);
    const third = gate.shared().then((pass) => (order.push('third'), pass));
    await settle();
    expect(order).toEqual(['other', 'second suspect']);
    (await second)();
    await settle();
    expect(order).toEqual(['other', 'second suspect', 'third']);
    (await third)();
  });

  it('ignores a pass called twice', async () => {
    const gate = new StartGate();
    const a = await gate.shared();
    const b = await gate.shared();
    a();
    a();
    let opened = false;
    const suspect = gate.exclusive().then((pass) => ((opened = true), pass));
    await settle();
    expect(opened).toBe(false);
    b();
    await settle();
    expect(opened).toBe(true);
    (await suspect)();
  });
});
