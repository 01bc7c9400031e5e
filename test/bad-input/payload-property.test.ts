import fc from 'fast-check';
import { beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { defineJob, isNightshiftError } from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';

// Properties of payloads at the API and the SQL path: whatever JSON fast-check generates that is
// storable comes back from getJob deep-equal; anything unstorable is refused with
// NS_PAYLOAD_INVALID and nothing is written.

const t = useTestDatabase('payload_prop');
const any = defineJob({ kind: 'any', payload: z.unknown(), run: async () => undefined });

beforeAll(async () => {
  // Registers the kind, so the SQL path (enqueueRegistered) knows it too.
  const ns = t.client({ jobs: [any] });
  await ns.migrate();
  await ns.stop();
});

/** Strings (and keys) PostgreSQL can hold: no NUL, no lone surrogate. */
function storable(v: unknown): boolean {
  if (typeof v === 'string') return !v.includes('\u0000') && v.isWellFormed();
  if (Array.isArray(v)) return v.every(storable);
  if (v !== null && typeof v === 'object') return Object.entries(v).every(([k, x]) => storable(k) && storable(x));
  return true;
}

const json = fc.jsonValue({ maxDepth: 4, stringUnit: 'binary' });
// Lone surrogates are not in 'binary'; mix them in on purpose.
const withSurrogates = fc.jsonValue({ maxDepth: 3, stringUnit: fc.constantFrom('a', '\ud800', '\udfff', '😀', '\u0000', 'é') });

const poisons: fc.Arbitrary<{ what: string; value: unknown; asKey?: string }> = fc.constantFrom(
  { what: 'NUL', value: 'a\u0000b' },
  { what: 'lone high surrogate', value: 'x\ud800' },
  { what: 'lone low surrogate', value: '\udfffx' },
  { what: 'NaN', value: Number.NaN },
  { what: 'Infinity', value: Infinity },
  { what: '-Infinity', value: -Infinity },
  { what: 'function', value: () => 1 },
  { what: 'Map', value: new Map([[1, 2]]) },
  { what: 'Set', value: new Set([1]) },
  { what: 'bigint', value: 10n },
  { what: 'symbol', value: Symbol('s') },
  { what: 'invalid Date', value: new Date(Number.NaN) },
  { what: 'NUL in a key', value: 1, asKey: 'k\u0000' },
  { what: 'lone surrogate in a key', value: 1, asKey: '\udc00' },
);

/** Puts `poison` somewhere inside `v` (`at` picks where). */
function inject(v: unknown, poison: { value: unknown; asKey?: string }, at: number): unknown {
  const key = poison.asKey ?? `p${at}`;
  if (Array.isArray(v) && v.length > 0 && !poison.asKey) {
    const i = at % v.length;
    const copy = [...v];
    copy[i] = at % 2 === 0 ? poison.value : inject(copy[i], poison, Math.floor(at / 2));
    return copy;
  }
  if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
    const keys = Object.keys(v);
    if (keys.length > 0 && at % 2 === 1) {
      const k = keys[at % keys.length]!;
      return { ...(v as object), [k]: inject((v as Record<string, unknown>)[k], poison, Math.floor(at / 2)) };
    }
    return { ...(v as object), [key]: poison.value };
  }
  return { value: v, [key]: poison.value };
}

describe('payload round trip (properties)', () => {
  it('any storable JSON value comes back deep-equal, through the API and through the SQL function', async () => {
    const ns = t.client({ jobs: [any] });
    await fc.assert(
      fc.asyncProperty(fc.oneof(json, withSurrogates).filter(storable), fc.boolean(), async (value, viaSql) => {
        const { id } = viaSql ? await ns.enqueueRegistered('any', value) : await ns.enqueue(any, value);
        const job = await ns.getJob(id);
        // JSON's own meaning of the value (-0 is 0): what any JSON store keeps.
        expect(job.payload).toEqual(JSON.parse(JSON.stringify(value)));
      }),
      { numRuns: 150 },
    );
  });

  it('any JSON value with something unstorable inside is refused with NS_PAYLOAD_INVALID, nothing written', async () => {
    const ns = t.client({ jobs: [any] });
    await fc.assert(
      fc.asyncProperty(json, poisons, fc.nat(), fc.boolean(), async (value, poison, at, viaSql) => {
        const payload = inject(value, poison, at);
        const before = await t.jobCount();
        const err = await (viaSql ? ns.enqueueRegistered('any', payload) : ns.enqueue(any, payload)).then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(isNightshiftError(err), `${poison.what} was accepted (at ${at})`).toBe(true);
        expect((err as { code: string }).code).toBe('NS_PAYLOAD_INVALID');
        expect(await t.jobCount()).toBe(before);
      }),
      { numRuns: 150 },
    );
  });

  it('strings with NUL or lone surrogates are refused wherever they are', async () => {
    const ns = t.client({ jobs: [any] });
    await fc.assert(
      fc.asyncProperty(
        withSurrogates.filter((v) => !storable(v)),
        async (value) => {
          const err = await ns.enqueue(any, value).then(
            () => undefined,
            (e: unknown) => e as { code: string },
          );
          expect(err?.code).toBe('NS_PAYLOAD_INVALID');
        },
      ),
      { numRuns: 100 },
    );
  });
});
