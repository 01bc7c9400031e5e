import { randomUUID } from 'node:crypto';
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
 *
 * Each load is fresh, the config and every file it imports evaluated again: `tsImport` takes a
 * new namespace per call, and so does the `require` here — tsx's plain `require` shares one
 * namespace per process, so a second load (the CLI run in-process, as its tests do) returned the
 * first load's modules. Nothing is unloaded: a process that loads many configs keeps them all.
 */
/** The tsx namespaces of the CommonJS configs loaded so far. */
const earlierLoads: string[] = [];

async function importTypeScript(path: string): Promise<{ default?: unknown }> {
  if (isCommonJs(path)) {
    const { register, require: tsxRequire } = await import('tsx/cjs/api');
    // Node finds a relative require in a cache keyed by the parent's directory and the request,
    // whatever the namespace: the files of earlier loads leave require's cache first, or this
    // config would be handed theirs. (A process that loads its config once never gets here twice.)
    for (const key of Object.keys(tsxRequire.cache)) if (earlierLoads.some((ns) => key.includes(`namespace=${ns}`))) delete tsxRequire.cache[key];
    const namespace = randomUUID();
    earlierLoads.push(namespace);
    const exports = register({ namespace }).require(path, import.meta.url) as { __esModule?: unknown; default?: unknown } | undefined;
    // `export default` compiles to an ES-module shape; `module.exports = …` is the default itself.
    return exports?.__esModule === true ? exports : { default: exports };
  }
  const { tsImport } = await import('tsx/esm/api');
  return (await tsImport(pathToFileURL(path).href, import.meta.url)) as { default?: unknown };
}
