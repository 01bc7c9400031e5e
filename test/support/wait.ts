/**
 * Waits until `condition` returns a truthy value (checked every `everyMs`, default 20), or fails
 * after `timeoutMs` (default 60 s) with `what` in the message. A condition that throws counts as
 * "not yet" (a server may be restarting under a fault) and its last error is in the message.
 * This waits on an observable condition — it is not a sleep — and the timeout only bounds a
 * broken run, it asserts nothing about speed. The one polling helper of the suite, fault
 * scenarios included.
 */
export async function waitFor<T>(what: string, condition: () => T | Promise<T>, options: { timeoutMs?: number; everyMs?: number } = {}): Promise<NonNullable<T>> {
  const timeoutMs = options.timeoutMs ?? 60_000;
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await condition();
      if (value) return value as NonNullable<T>;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${last ? ` (last error: ${String(last)})` : ''}`);
    }
    await new Promise((r) => setTimeout(r, options.everyMs ?? 20));
  }
}

/** Resolves with the first event for which `match` is true. */
export function nextEvent<E>(subscribe: (l: (e: E) => void) => () => void, match: (e: E) => boolean): Promise<E> {
  return new Promise((resolve) => {
    const off = subscribe((e) => {
      if (match(e)) {
        off();
        resolve(e);
      }
    });
  });
}
