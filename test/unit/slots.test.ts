import { describe, expect, it } from 'vitest';
import { Slots } from '../../src/worker/slots.js';

// The counting limit behind a worker's concurrency (process-wide and per queue). Pure logic: no
// database, no timers. Waits settle in microtasks, so `settled()` lets them run before looking.

const settled = () => new Promise((r) => setImmediate(r));

/** Records the order in which acquire() promises resolve, and with what. */
function recorder() {
  const order: string[] = [];
  const track = (name: string, p: Promise<boolean>) => void p.then((got) => order.push(`${name}:${got}`));
  return { order, track };
}

describe('Slots: take and give', () => {
  it('takes at most the free slots and counts them in use', () => {
    const s = new Slots(3);
    expect(s.take(2)).toBe(2);
    expect(s.take(5)).toBe(1);
    expect(s.take(1)).toBe(0);
    expect({ free: s.free, inUse: s.inUse }).toEqual({ free: 0, inUse: 3 });
    s.give(2);
    expect({ free: s.free, inUse: s.inUse }).toEqual({ free: 2, inUse: 1 });
  });

  it('ignores a take or give of nothing (zero or negative)', () => {
    const s = new Slots(2);
    expect(s.take(0)).toBe(0);
    expect(s.take(-3)).toBe(0);
    s.take(1);
    s.give(0);
    s.give(-1);
    expect(s.inUse).toBe(1);
  });
});

describe('Slots: acquire in first-come order', () => {
  it('resolves at once with a slot when one is free and nobody waits', async () => {
    const s = new Slots(1);
    await expect(s.acquire({})).resolves.toBe(true);
    expect(s.inUse).toBe(1);
    expect(s.contended).toBe(false);
  });

  it('makes waiters wait while every slot is taken, and serves them in the order they came', async () => {
    const s = new Slots(2);
    s.take(2);
    const { order, track } = recorder();
    track('a', s.acquire({}));
    track('b', s.acquire({}));
    track('c', s.acquire({}));
    await settled();
    expect(order).toEqual([]);
    expect(s.contended).toBe(true);

    s.give(1);
    await settled();
    expect(order).toEqual(['a:true']);
    s.give(2);
    await settled();
    expect(order).toEqual(['a:true', 'b:true', 'c:true']);
    expect(s.contended).toBe(false);
    expect(s.inUse).toBe(2);
  });

  it('gives a returned slot to the longest waiter before it is free for anyone (a take finds none)', async () => {
    const s = new Slots(1);
    s.take(1);
    const { order, track } = recorder();
    track('waiter', s.acquire({}));
    s.give(1);
    // The slot went to the waiter within give(): nothing is free for a claim that takes directly.
    expect(s.free).toBe(0);
    expect(s.take(1)).toBe(0);
    await settled();
    expect(order).toEqual(['waiter:true']);
  });

  it('gives what is left after every waiter is served back to the free count', async () => {
    const s = new Slots(3);
    s.take(3);
    const { order, track } = recorder();
    track('a', s.acquire({}));
    s.give(3);
    await settled();
    expect(order).toEqual(['a:true']);
    expect({ free: s.free, inUse: s.inUse }).toEqual({ free: 2, inUse: 1 });
  });

  it('an acquire while served waiters hold every slot waits for the next slot given back', async () => {
    const s = new Slots(1);
    s.take(1);
    const { order, track } = recorder();
    track('first', s.acquire({}));
    s.give(1); // to `first`
    track('second', s.acquire({}));
    s.give(1); // `first` gives its slot back: `second` gets it
    await settled();
    expect(order).toEqual(['first:true', 'second:true']);
  });
});

describe('Slots: cancel', () => {
  it("withdraws only the owner's waits (they resolve false) and keeps the others' order", async () => {
    const s = new Slots(1);
    s.take(1);
    const fetcherA = {};
    const fetcherB = {};
    const { order, track } = recorder();
    track('a1', s.acquire(fetcherA));
    track('b1', s.acquire(fetcherB));
    track('a2', s.acquire(fetcherA));
    track('b2', s.acquire(fetcherB));
    s.cancel(fetcherA);
    await settled();
    expect(order).toEqual(['a1:false', 'a2:false']);
    expect(s.inUse).toBe(1);

    s.give(1);
    s.give(1);
    await settled();
    expect(order).toEqual(['a1:false', 'a2:false', 'b1:true', 'b2:true']);
  });

  it('is a no-op for an owner that does not wait', async () => {
    const s = new Slots(1);
    s.take(1);
    const { order, track } = recorder();
    track('a', s.acquire({}));
    s.cancel({});
    await settled();
    expect(order).toEqual([]);
    expect(s.contended).toBe(true);
    s.give(1);
    await settled();
    expect(order).toEqual(['a:true']);
  });

  it('leaves a cancelled wait without a slot: the slot stays free for the next one', async () => {
    const s = new Slots(1);
    s.take(1);
    const owner = {};
    const wait = s.acquire(owner);
    s.cancel(owner);
    await expect(wait).resolves.toBe(false);
    s.give(1);
    expect(s.free).toBe(1);
    await expect(s.acquire({})).resolves.toBe(true);
  });
});
