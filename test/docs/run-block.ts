// Runs a doc code block for real, as written: transpiled to CommonJS and evaluated in an async
// function (so top-level `await` works), with the modules it imports supplied by the test — the
// real `nightshift`, wrapped where the test must see or steer what the block does — and with
// `process.env` replaced, so a block's `process.env.DATABASE_URL` is the test database.
import ts from 'typescript';
import type { DocBlock } from './doc-blocks.js';

const AsyncFunction = Object.getPrototypeOf(async () => {}).constructor as new (...args: string[]) => (...values: unknown[]) => Promise<void>;

/** What the block's module exported (`export default` is `default`). */
export type BlockExports = Record<string, unknown>;

/**
 * Evaluates `block` with `modules` as the only importable modules (an import of any other is an
 * error naming the block) and `env` as `process.env`. Resolves with its exports once the block's
 * top level has run.
 */
export async function runBlock(block: DocBlock, modules: Record<string, unknown>, env: Record<string, string | undefined> = {}): Promise<BlockExports> {
  const js = ts.transpileModule(block.code, {
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
    fileName: `${block.doc}_L${block.fenceLine}.ts`,
  }).outputText;
  const exports: BlockExports = {};
  const require = (name: string) => {
    if (!(name in modules)) throw new Error(`${block.doc}:${block.fenceLine}: the block imports ${name}, which the test does not provide`);
    return modules[name];
  };
  const fakeProcess = Object.create(process, { env: { value: env } }) as NodeJS.Process;
  await new AsyncFunction('require', 'exports', 'process', js)(require, exports, fakeProcess);
  return exports;
}

/** The first block of `lang` under the heading `heading` (a line `## Use it`) of `blocks`' doc. */
export function blockUnder(blocks: DocBlock[], docText: string, heading: string, lang = 'ts'): DocBlock {
  const lines = docText.split('\n');
  const at = lines.findIndex((l) => l.trim() === heading);
  if (at < 0) throw new Error(`no heading "${heading}"`);
  const next = lines.findIndex((l, i) => i > at && /^#{1,6} /.test(l));
  const block = blocks.find((b) => b.lang === lang && b.fenceLine > at + 1 && (next < 0 || b.fenceLine < next + 1));
  if (!block) throw new Error(`no ${lang} block under "${heading}"`);
  return block;
}
