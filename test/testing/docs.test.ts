// Every code example of docs/testing.md is a region of a file that runs in this suite
// (`<!-- example: path#region -->` above the block): the doc shows the code that is tested.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const read = (path: string) => readFileSync(`${ROOT}${path}`, 'utf8');

/** The lines between `// #region name` and the next `// #endregion`, unindented. */
function region(path: string, name: string): string {
  const lines = read(path).split('\n');
  const start = lines.findIndex((l) => l.trim() === `// #region ${name}`);
  if (start < 0) throw new Error(`no region "${name}" in ${path}`);
  const end = lines.findIndex((l, i) => i > start && l.trim() === '// #endregion');
  const body = lines.slice(start + 1, end);
  const indent = Math.min(...body.filter((l) => l.trim()).map((l) => l.length - l.trimStart().length));
  return body.map((l) => l.slice(indent)).join('\n');
}

const doc = read('docs/testing.md');
const examples = [...doc.matchAll(/<!-- example: ([^#\s]+)#([\w-]+) -->\n```ts\n([\s\S]*?)\n```/g)].map((m) => ({ path: m[1]!, name: m[2]!, code: m[3]! }));

describe('docs/testing.md', () => {
  it('has an example for each helper', () => {
    for (const helper of ['startEmbeddedPostgres(', 'createTestSchema(', 'runJob(', 'drain(', 'assertEnqueued(', 'refuteEnqueued(', 'tick(']) {
      expect(examples.some((e) => e.code.includes(helper)), helper).toBe(true);
    }
    // Every ts block is an example taken from a tested file.
    expect(doc.match(/```ts\n/g)?.length).toBe(examples.length);
  });

  it.each(examples.map((e) => [`${e.path}#${e.name}`, e] as const))('%s matches the tested code', (_label, e) => {
    expect(e.code).toBe(region(e.path, e.name));
  });
});
