import { cpSync, mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

const here = dirname(fileURLToPath(import.meta.url));

/**
 * Bundles bench/child.ts and bench/streams/child.ts (with nightshift's sources) to JavaScript, so child processes
 * run on plain `node`: a TypeScript loader in the child would add ~50 MB to the RSS being measured
 * and CPU to every run. Packages stay external (the peers load from node_modules as users load
 * them). The migrations are copied beside the bundle, where nightshift's migrator looks for them
 * (the migrator's chunk sits in the same directory).
 */
export async function buildChild(): Promise<string> {
  const outDir = join(here, '.build');
  mkdirSync(outDir, { recursive: true });
  await build({
    entryPoints: { child: join(here, 'child.ts'), 'streams-child': join(here, 'streams', 'child.ts') },
    outdir: outDir,
    outExtension: { '.js': '.mjs' },
    // One chunk per system, loaded on demand: a child loads only the library it measures.
    splitting: true,
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    packages: 'external',
    sourcemap: true,
    logLevel: 'warning',
  });
  cpSync(join(here, '..', 'src', 'db', 'migrations'), join(outDir, 'migrations'), { recursive: true });
  return join(outDir, 'child.mjs');
}

/** The bundled streams child, beside the one {@link buildChild} returns. */
export function streamsChildScript(childScript: string): string {
  return join(dirname(childScript), 'streams-child.mjs');
}
