import { definePipeline } from 'nightshift';
// The sample app's pipeline: a daily report whose steps are jobs the testing helpers run.
import { z } from 'zod';

// #region report
export const dailyReport = definePipeline({ name: 'daily-report', key: z.string().regex(/^\d{4}-\d{2}-\d{2}$/), store: 'database' })
  .step('load', async (ctx) => ({ day: ctx.key, rows: 3 }))
  .map('score', { needs: ['load'], items: ({ load }) => Array.from({ length: load.rows }, (_, i) => i + 1) }, async (_ctx, n) => n * 10)
  .step('total', { needs: ['score'] }, async (ctx) => {
    const total = ctx.needs.score.reduce((sum, r) => sum + r.value, 0);
    await ctx.artifact('total.json', { total });
    return total;
  });
// #endregion
