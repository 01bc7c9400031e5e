// Builds dist/: compiles TypeScript, then copies the SQL migrations beside the compiled runner.
import { execFileSync } from 'node:child_process';
import { cpSync, rmSync, chmodSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { createRequire } from 'node:module';

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
