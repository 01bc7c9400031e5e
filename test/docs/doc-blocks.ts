// Reads the fenced code blocks of the repository's Markdown docs, for test/docs/code-blocks.test.ts.
// The rules a block follows (CONTRIBUTING.md, "Code blocks in docs") are checked there; this file
// only finds the blocks and says where each one sits.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../..', import.meta.url));

/** One fenced block of a Markdown file. */
export interface DocBlock {
  /** The doc, relative to the repository root (`docs/jobs.md`). */
  doc: string;
  /** 1-based line of the opening fence. */
  fenceLine: number;
  /** The language word of the info string (`ts`, `sql`); empty when the fence names none. */
  lang: string;
  /** The words after the language (`fragment`). */
  flags: string[];
  /** The block's text, without the fences, with the fence's indentation removed. */
  code: string;
  /** `path#region` from an `<!-- example: path#region -->` line right above the fence. */
  region?: { path: string; name: string };
}

/** Languages compiled as TypeScript. */
export const TYPESCRIPT = new Set(['ts', 'typescript']);

/** The Markdown files whose blocks are checked: README, the contributor guides, and docs/. */
export function docFiles(): string[] {
  const top = ['README.md', 'CONTRIBUTING.md', 'AGENTS.md', 'CHANGELOG.md'].filter((f) => existsSync(`${ROOT}${f}`));
  const docs = readdirSync(`${ROOT}docs`)
    .filter((f) => f.endsWith('.md'))
    .sort()
    .map((f) => `docs/${f}`);
  return [...top, ...docs];
}

/** Every fenced block of `doc`, in order. An unclosed fence is an error, not a silent skip. */
export function docBlocks(doc: string): DocBlock[] {
  const lines = readFileSync(`${ROOT}${doc}`, 'utf8').split('\n');
  const blocks: DocBlock[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = /^( {0,3})(`{3,}|~{3,})\s*([^`\s]*)\s*(.*)$/.exec(lines[i]!);
    if (!open) continue;
    const [, indent, fence, lang, rest] = open as unknown as [string, string, string, string, string];
    const end = lines.findIndex((l, j) => j > i && l.trim().startsWith(fence) && l.trim().replace(/[`~]/g, '') === '');
    if (end < 0) throw new Error(`${doc}:${i + 1}: the code block opened here is never closed`);
    const above = /^<!-- example: ([^#\s]+)#([\w-]+) -->$/.exec(lines[i - 1]?.trim() ?? '');
    blocks.push({
      doc,
      fenceLine: i + 1,
      lang: lang.toLowerCase(),
      flags: rest.split(/\s+/).filter(Boolean),
      code: lines
        .slice(i + 1, end)
        .map((l) => (l.startsWith(indent) ? l.slice(indent.length) : l))
        .join('\n'),
      ...(above ? { region: { path: above[1]!, name: above[2]! } } : {}),
    });
    i = end;
  }
  return blocks;
}

/** The lines between `// #region name` and the next `// #endregion` of `path`, unindented. */
export function sourceRegion(path: string, name: string): string {
  const lines = readFileSync(`${ROOT}${path}`, 'utf8').split('\n');
  const start = lines.findIndex((l) => l.trim() === `// #region ${name}`);
  if (start < 0) throw new Error(`no region "${name}" in ${path}`);
  const end = lines.findIndex((l, i) => i > start && l.trim() === '// #endregion');
  const body = lines.slice(start + 1, end);
  const indent = Math.min(...body.filter((l) => l.trim()).map((l) => l.length - l.trimStart().length));
  return body.map((l) => l.slice(indent)).join('\n');
}
