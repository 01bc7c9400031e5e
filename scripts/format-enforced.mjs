// The files whose formatting and import order are enforced, read from .format-enforced by the
// formatter check (scripts/format-check.mjs) and by eslint.config.js, so the two never disagree.
import { readFileSync } from 'node:fs';

/** The source files the formatter handles: code only (docs, JSON and SQL keep their own shape). */
export const CODE_EXTENSIONS = ['ts', 'mts', 'cts', 'js', 'mjs', 'cjs'];

/**
 * The globs of .format-enforced, each narrowed to code files: `test/support/**` becomes
 * `test/support/**\/*.{ts,…}`, `**` becomes every code file; a plain file name stays as it is.
 */
export function formatEnforced() {
  const text = readFileSync(new URL('../.format-enforced', import.meta.url), 'utf8');
  return text
    .split('\n')
    .map((line) => line.replace(/#.*/, '').trim())
    .filter(Boolean)
    .map((glob) => (glob.endsWith('**') ? `${glob}/*.{${CODE_EXTENSIONS.join(',')}}` : glob));
}
