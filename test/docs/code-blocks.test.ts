// Every TypeScript block of README.md, the contributor guides and docs/ compiles, as a reader
// would paste it into a project that depends on nightshift (CONTRIBUTING.md, "Code blocks in
// docs", states the rules checked here). One program compiles all of them.
import { describe, expect, it } from 'vitest';
import { compileBlocks } from './compile-blocks.js';
import { docBlocks, docFiles, ROOT, sourceRegion, TYPESCRIPT, type DocBlock } from './doc-blocks.js';

/** Languages that are not compiled: shell, SQL and the like. A fence must name its language. */
const NOT_COMPILED = new Set(['sh', 'bash', 'shell', 'console', 'sql', 'ini', 'promql', 'mermaid', 'json', 'yaml', 'yml', 'text', 'diff', 'toml', 'dockerfile']);
/** The one flag a ts block may carry. */
const FRAGMENT = 'fragment';

const blocks = docFiles().flatMap(docBlocks);
const typescript = blocks.filter((b) => TYPESCRIPT.has(b.lang) && !b.region);
const regions = blocks.filter((b) => b.region);
const where = (b: DocBlock) => `${b.doc}:${b.fenceLine}`;

/**
 * What is wrong with a compiled block: its errors, unless it is marked a fragment — and then that
 * it compiles, because the marker must stay true (a fragment that compiles should be a normal block).
 */
function verdict(block: DocBlock, errors: string[]): string[] {
  if (!block.flags.includes(FRAGMENT)) {
    return errors.length ? [`${where(block)} does not compile; fix it, or mark it \`\`\`ts fragment if it may not (CONTRIBUTING.md)`, ...errors] : [];
  }
  return errors.length ? [] : [`${where(block)} is marked "fragment" but compiles: drop the marker`];
}

let compiled: ReturnType<typeof compileBlocks> | undefined;
const compile = () => (compiled ??= compileBlocks(typescript));

describe('doc code blocks', () => {
  it('finds the docs and their TypeScript blocks', () => {
    expect(docFiles()).toEqual(expect.arrayContaining(['README.md', 'docs/jobs.md', 'docs/streams.md']));
    expect(typescript.length).toBeGreaterThan(10);
  });

  it('every fence names a language the test knows', () => {
    const unknown = blocks.filter((b) => !TYPESCRIPT.has(b.lang) && !NOT_COMPILED.has(b.lang)).map((b) => `${where(b)} \`\`\`${b.lang}`);
    expect(unknown, 'name the language of each block (```ts, ```sh, ```sql, …)').toEqual([]);
  });

  it('ts blocks carry no flag but "fragment"', () => {
    const bad = typescript.filter((b) => b.flags.some((f) => f !== FRAGMENT)).map((b) => `${where(b)} ${b.flags.join(' ')}`);
    expect(bad).toEqual([]);
  });

  it('the prelude compiles', () => {
    expect(compile().prelude).toEqual([]);
  });

  it.each(typescript.map((b) => [where(b), b] as const))('%s compiles', (_label, block) => {
    const result = compile().results.find((r) => r.block === block)!;
    expect(verdict(block, result.errors)).toEqual([]);
  });

  it.each(regions.map((b) => [where(b), b] as const))('%s is the tested region it names', (_label, block) => {
    const { path, name } = block.region!;
    // The region's file is compiled by `npm run typecheck` (tsconfig.json includes src/, test/, examples/).
    expect(path).toMatch(/^(src|test|examples)\//);
    expect(block.code).toBe(sourceRegion(path, name));
  });
});

describe('the checker itself', () => {
  const fake = (code: string, fenceLine = 40): DocBlock => ({ doc: 'docs/fake.md', fenceLine, lang: 'ts', flags: [], code });

  it('reports an error at its line of the doc, and resolves nightshift to src/', () => {
    const { results, files } = compileBlocks([
      fake(["import { createNightshift } from 'nightshift';", '', "createNightshift({ databaseUrl: 'postgres://x', concurency: 4 });"].join('\n')),
      fake("import { runJob } from 'nightshift/testing';\nexport const r: typeof runJob = runJob;", 50),
      fake('await ns.enqueue(sendReceipt, { orderId: 1 });', 60),
    ]);
    // Line 3 of a block whose fence is on line 40 is line 43 of the doc.
    expect(results[0]!.errors).toEqual([expect.stringMatching(/^docs\/fake\.md:43:\d+ TS2561 .*'concurency'.*'concurrency'/)]);
    expect(results[1]!.errors).toEqual([]);
    expect(files).toEqual(expect.arrayContaining([`${ROOT}src/index.ts`, `${ROOT}src/testing/index.ts`]));
    expect(files.filter((f) => f.startsWith(`${ROOT}dist/`))).toEqual([]);
    // Prelude names are typed: orderId is a string, and email is required.
    expect(results[2]!.errors.join('\n')).toMatch(/^docs\/fake\.md:61:\d+ TS2322 /);
  });

  it('fails a block that does not compile, and a fragment that does', () => {
    const broken = fake('const n: number = "one";');
    const whole = { ...fake('export const n = 1;', 70), flags: [FRAGMENT] };
    const piece = { ...fake("defineSchedule({ name: 'x', every: '1m', job: settle }),", 80), flags: [FRAGMENT] };
    const { results } = compileBlocks([broken, whole, piece]);
    expect(verdict(broken, results[0]!.errors)[0]).toMatch(/^docs\/fake\.md:40 does not compile/);
    expect(verdict(whole, results[1]!.errors)).toEqual(['docs/fake.md:70 is marked "fragment" but compiles: drop the marker']);
    expect(verdict(piece, results[2]!.errors)).toEqual([]);
  });

  it('lets a block declare a prelude name itself', () => {
    const { results } = compileBlocks([fake("import { createNightshift } from 'nightshift';\nconst ns = createNightshift({ databaseUrl: 'postgres://x' });\nawait ns.migrate();")]);
    expect(results[0]!.errors).toEqual([]);
  });
});
