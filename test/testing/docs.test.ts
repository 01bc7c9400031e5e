// docs/testing.md shows one worked example per helper of nightshift/testing. Each example is a
// region of a file that runs in this suite; test/docs/code-blocks.test.ts checks that every block
// under `<!-- example: path#region -->` is that region to the letter.
import { describe, expect, it } from 'vitest';
import { docBlocks } from '../docs/doc-blocks.js';

describe('docs/testing.md', () => {
  it('has a tested example for each helper, and every TypeScript block is one', () => {
    const blocks = docBlocks('docs/testing.md').filter((b) => b.lang === 'ts');
    expect(blocks.length).toBeGreaterThan(0);
    expect(blocks.filter((b) => !b.region)).toEqual([]);
    for (const helper of ['startEmbeddedPostgres(', 'createTestSchema(', 'runJob(', 'drain(', 'assertEnqueued(', 'refuteEnqueued(', 'tick(']) {
      expect(
        blocks.some((b) => b.code.includes(helper)),
        helper,
      ).toBe(true);
    }
  });
});
