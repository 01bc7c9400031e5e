/**
 * Waits until `condition` returns a truthy value (checked every `everyMs`), or fails after
 * `timeoutMs` with `what` in the message. This waits on an observable condition — it is not a
 * sleep — and the timeout only bounds a broken run, it asserts nothing about speed.
 */
export async function waitFor<T>(what: string, condition: () => T | Promise<T>, options: { timeoutMs?: number; everyMs?: number } = {}): Promise<NonNullable<T>> {
  const deadline = Date.now() + (options.timeoutMs ?? 60_000);
  let last: unknown;
  for (;;) {
    try {
      const value = await condition();
      if (value) return value as NonNullable<T>;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${what}${last ? ` (last error: ${String(last)})` : ''}`);
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
