import { readFileSync, statSync } from 'node:fs';
import { dirname, resolve, sep } from 'node:path';

const IMPORT = /(?:\bfrom\s*|\bimport\s*\(\s*|\bimport\s+)['"]([^'"]+)['"]/g;
const EXTENSIONS = ['', '.ts', '.mts', '.cts', '.tsx', '.js', '.mjs', '.cjs', '.json', '/index.ts', '/index.js'];

/** The file a relative import names, trying what TypeScript projects write (`./jobs.js` for `jobs.ts`). */
function resolveLocal(from: string, spec: string): string | undefined {
  const base = resolve(dirname(from), spec);
  const stems = [base, base.replace(/\.(m|c)?js$/, '.$1ts'), base.replace(/\.(m|c)?js$/, '')];
  for (const stem of stems) {
    for (const ext of EXTENSIONS) {
      const file = stem + ext;
      try {
        if (statSync(file).isFile()) return file;
      } catch {
        // Not this one.
      }
    }
  }
  return undefined;
}

/**
 * The project files `entry` imports, directly or not: relative imports followed through the
 * sources, within the project directory and outside node_modules. A scan of the import
 * statements: `nightshift dev` watches them from a process that never loads the app (the app runs
 * in a child process, started afresh on each change, so every file is read again).
 */
export function localImports(entry: string, cwd: string): string[] {
  const seen = new Set<string>([entry]);
  const queue = [entry];
  while (queue.length > 0) {
    const file = queue.shift()!;
    let text: string;
    try {
      text = readFileSync(file, 'utf8');
    } catch {
      continue;
    }
    for (const m of text.matchAll(IMPORT)) {
      const spec = m[1]!;
      if (!spec.startsWith('.') && !spec.startsWith('/')) continue;
      const target = resolveLocal(file, spec);
      if (!target || seen.has(target) || !target.startsWith(cwd + sep) || target.includes(`${sep}node_modules${sep}`)) continue;
      seen.add(target);
      queue.push(target);
    }
  }
  return [...seen];
}
