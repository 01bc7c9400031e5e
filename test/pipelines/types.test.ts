import { describe, expect, expectTypeOf, it } from 'vitest';
import { z } from 'zod';
import { definePipeline, type ItemOk, type ItemResult, type StepResult } from '../../src/index.js';

// Checked by the type checker (npm run typecheck compiles the tests): each expectation fails the
// build when the types stop flowing, and each @ts-expect-error fails it when a mistake compiles.
describe('types flow from the key, the input and each step into the steps that need them', () => {
  it('types ctx.key, ctx.input and ctx.needs', () => {
    const p = definePipeline({ name: 'typed', key: z.string().regex(/^\d+$/), input: z.object({ currency: z.enum(['EUR', 'USD']) }) })
      .step('freeze', async (ctx) => {
        expectTypeOf(ctx.key).toEqualTypeOf<string>();
        expectTypeOf(ctx.input).toEqualTypeOf<{ currency: 'EUR' | 'USD' }>();
        expectTypeOf(ctx.needs).toEqualTypeOf<Record<never, never>>();
        return { pools: [1, 2, 3], at: 'x' };
      })
      .map('settle', { needs: ['freeze'], items: ({ freeze }) => freeze.pools, itemKey: (n) => `pool-${n}` }, async (ctx, pool) => {
        expectTypeOf(pool).toEqualTypeOf<number>();
        expectTypeOf(ctx.needs.freeze).toEqualTypeOf<{ pools: number[]; at: string }>();
        return { winners: pool };
      })
      .map('recover', { needs: ['freeze'], items: ({ freeze }) => freeze.pools, optional: true }, async () => 'ok' as const)
      .step('notify', { needs: ['settle'], optional: true }, async () => 7)
      .step('stats', { needs: ['settle', 'recover', 'notify'] }, async (ctx) => {
        expectTypeOf(ctx.needs.settle).toEqualTypeOf<ItemOk<{ winners: number }>[]>();
        expectTypeOf(ctx.needs.recover).toEqualTypeOf<ItemResult<'ok'>[]>();
        expectTypeOf(ctx.needs.notify).toEqualTypeOf<StepResult<number>>();
        // @ts-expect-error: stats does not need freeze, so it cannot read it
        void ctx.needs.freeze;
        return null;
      });
    // @ts-expect-error: a step can only need steps defined before it (and at run time it throws)
    expect(() => p.step('bad', { needs: ['later'] }, async () => 1)).toThrow(/"later" is not an earlier step/);
    p.onSuccess('pot-sync', (run) => {
      expectTypeOf(run.key).toEqualTypeOf<string>();
      expectTypeOf(run.input).toEqualTypeOf<{ currency: 'EUR' | 'USD' }>();
      return {};
    });
  });
});
