import { existsSync, readFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { ConfigError, isNightshiftError } from '../errors.js';
import { defineConfig, type NightshiftConfig } from './define-config.js';

/** Config file names looked for in the working directory, in order. */
export const CONFIG_FILES = ['nightshift.config.ts', 'nightshift.config.mts', 'nightshift.config.js', 'nightshift.config.mjs'];

/** A loaded config and where it came from. */
export interface LoadedConfig {
  path: string | undefined;
  config: Readonly<NightshiftConfig>;
}

/**
 * Loads the config: `explicit` (`--config`) or the first of {@link CONFIG_FILES} in `cwd`.
 * TypeScript files load without a build step (through tsx). The default export must be
 * `defineConfig({...})` (a plain object is validated the same way). No file: an empty config,
 * unless one was asked for by name.
 */
export async function loadConfig(explicit: string | undefined, cwd = process.cwd()): Promise<LoadedConfig> {
  const path = explicit ? resolve(cwd, explicit) : CONFIG_FILES.map((f) => resolve(cwd, f)).find((f) => existsSync(f));
  if (!path) return { path: undefined, config: defineConfig({}) };
  if (!existsSync(path)) throw new ConfigError('config file', [{ path: explicit ?? path, message: `no such file: ${path}` }]);
  let mod: { default?: unknown };
  try {
    if (/\.[mc]?ts$/.test(path)) {
      mod = await importTypeScript(path);
    } else {
      mod = (await import(pathToFileURL(path).href)) as { default?: unknown };
    }
  } catch (err) {
    if (isNightshiftError(err)) throw err;
    throw new ConfigError(`config file ${path}`, [{ path: '', message: `could not be loaded: ${err instanceof Error ? err.message : String(err)}` }]);
  }
  if (mod.default === undefined) {
    // Said as such: validating the module's named exports as a config reported them as unknown keys.
    const names = Object.keys(mod).filter((k) => k !== '__esModule' && k !== 'default');
    throw new ConfigError(`config file ${path}`, [
      { path: 'default', message: `the file has no default export${names.length ? ` (it exports ${names.slice(0, 10).join(', ')})` : ''}; write export default defineConfig({ ... })` },
    ]);
  }
  const value = (mod.default as { default?: unknown } | undefined)?.default ?? mod.default;
  if (typeof value !== 'object' || value === null) {
    throw new ConfigError(`config file ${path}`, [{ path: 'default', message: 'must default-export defineConfig({ ... })' }]);
  }
  return { path, config: defineConfig(value as NightshiftConfig) };
}

/**
 * Whether Node treats the file as CommonJS: `.cts`/`.cjs`, or `.ts`/`.js` in a package whose
 * nearest package.json does not say `"type": "module"`.
 */
export function isCommonJs(path: string): boolean {
  if (/\.c[jt]s$/.test(path)) return true;
  if (/\.m[jt]s$/.test(path)) return false;
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    const pkg = join(dir, 'package.json');
    if (existsSync(pkg)) {
      try {
        return (JSON.parse(readFileSync(pkg, 'utf8')) as { type?: unknown }).type !== 'module';
      } catch {
        return true;
      }
    }
    if (dirname(dir) === dir) return true;
  }
}

/**
 * Loads a TypeScript config without a build step. A CommonJS file goes through tsx's `require`:
 * tsx's ESM `tsImport` hands Node a CommonJS file as a `data:` URL of its transpiled text, so every
 * stack frame of code in the config (a job's handler, a daemon) would quote the whole config —
 * secrets included — into stored errors and logs. Through `require` the frames name the file.
 */
async function importTypeScript(path: string): Promise<{ default?: unknown }> {
  if (isCommonJs(path)) {
    const { require: tsxRequire } = await import('tsx/cjs/api');
    const exports = tsxRequire(path, import.meta.url) as { __esModule?: unknown; default?: unknown } | undefined;
    // `export default` compiles to an ES-module shape; `module.exports = …` is the default itself.
    return exports?.__esModule === true ? exports : { default: exports };
  }
  const { tsImport } = await import('tsx/esm/api');
  return (await tsImport(pathToFileURL(path).href, import.meta.url)) as { default?: unknown };
}
