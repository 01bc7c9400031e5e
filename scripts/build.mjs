// Builds dist/: compiles TypeScript, then copies the SQL migrations beside the compiled runner.
import { execFileSync } from 'node:child_process';
import { chmodSync, cpSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const require = createRequire(import.meta.url);
const tsc = join(dirname(require.resolve('typescript/package.json')), 'bin', 'tsc');

rmSync(join(root, 'dist'), { recursive: true, force: true });
execFileSync(process.execPath, [tsc, '-p', join(root, 'tsconfig.build.json')], { stdio: 'inherit' });
cpSync(join(root, 'src', 'db', 'migrations'), join(root, 'dist', 'db', 'migrations'), {
  recursive: true,
  filter: (src) => !src.endsWith('.ts'),
});
chmodSync(join(root, 'dist', 'cli', 'main.js'), 0o755);
