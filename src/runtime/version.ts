import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

let cached: string | undefined;

/** nightshift's version, from its package.json (found from src/ and from dist/ alike). */
export function nightshiftVersion(): string {
  if (cached) return cached;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 5; i++) {
    try {
      const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: string; version?: string };
      if (pkg.name === 'nightshift' && pkg.version) return (cached = pkg.version);
    } catch {
      // not here; look one level up
    }
    dir = dirname(dir);
  }
  return (cached = '0.0.0');
}
