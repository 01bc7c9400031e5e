// `npm run format:check`: prettier --check on the files of .format-enforced (import order is
// checked by `npm run lint` on the same files). Exits non-zero naming the files to format.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { formatEnforced } from './format-enforced.mjs';

const require = createRequire(import.meta.url);
const prettier = join(dirname(require.resolve('prettier/package.json')), 'bin', 'prettier.cjs');
const globs = formatEnforced();
const result = spawnSync(process.execPath, [prettier, '--check', '--no-error-on-unmatched-pattern', ...globs], { stdio: 'inherit', cwd: fileURLToPath(new URL('..', import.meta.url)) });
if (result.status !== 0) console.error('\nformat: run `npm run format` (prettier, then import order) and commit the result.');
process.exit(result.status ?? 1);
