import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { exitCodeFor } from '../../src/cli/exit-codes.js';
import { NIGHTSHIFT_ERROR_CODES, NightshiftError, type NightshiftErrorCode } from '../../src/errors.js';

// Bug 12 of issue 11: four codes thrown by the code were missing from docs/errors.md. Every code
// under src/ (TypeScript and SQL) must have its row, and the row's "(usage)" mark must match the
// CLI's exit code for it (2 for usage, 1 otherwise). Issue 12: the codes are a literal union
// (NightshiftErrorCode, from NIGHTSHIFT_ERROR_CODES), which is exactly the list of docs/errors.md.

function files(dir: string): string[] {
  return readdirSync(dir).flatMap((f) => {
    const path = join(dir, f);
    return statSync(path).isDirectory() ? files(path) : /\.(ts|sql)$/.test(f) ? [path] : [];
  });
}

const thrown = [...new Set(files('src').flatMap((f) => readFileSync(f, 'utf8').match(/\bNS_[A-Z][A-Z_]*[A-Z]\b/g) ?? []))].sort();
const docs = readFileSync('docs/errors.md', 'utf8');
const rows = new Map([...docs.matchAll(/^\| `(NS_[A-Z_]+)`( \(usage\))? \|/gm)].map((m) => [m[1]!, m[2] !== undefined]));

describe('docs/errors.md lists every code', () => {
  it('finds the codes it checks', () => {
    expect(thrown).toContain('NS_CONFIG_INVALID');
    expect(thrown.length).toBeGreaterThan(30);
  });

  it.each(thrown)('%s has a row', (code) => {
    expect(rows.has(code), `docs/errors.md has no row for ${code}`).toBe(true);
  });

  it('NightshiftErrorCode lists the codes of docs/errors.md, in its order', () => {
    expect([...NIGHTSHIFT_ERROR_CODES]).toEqual([...rows.keys()]);
  });

  it.each(thrown)('%s is a NightshiftErrorCode', (code) => {
    expect(NIGHTSHIFT_ERROR_CODES).toContain(code);
  });

  it.each([...rows])('%s: the CLI exit code matches the row (usage: %s)', (code, usage) => {
    expect(exitCodeFor(new NightshiftError(code as NightshiftErrorCode, 'x'))).toBe(usage ? 2 : 1);
  });
});
