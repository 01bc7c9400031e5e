import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { loadConfig } from '../../src/config/load-config.js';
import { createNightshift, defineStream, isNightshiftError, type NightshiftError } from '../../src/index.js';
import { publishEntry } from '../../src/streams/stream-publisher.js';
import { silentLogger } from '../../src/telemetry/logger.js';
import { useTestDatabase } from '../support/db.js';

// Bug 12 of issue 11, the API's side: a typed error with its code where a raw one (with a stack),
// a database failure or a job's wording came out — and the API refuses what the CLI refuses.

const t = useTestDatabase('typed');

async function rejection(p: Promise<unknown> | (() => unknown)): Promise<NightshiftError> {
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (err) {
    expect(isNightshiftError(err), String(err)).toBe(true);
    return err as NightshiftError;
  }
  throw new Error('expected a NightshiftError');
}

describe('createNightshift refuses what the CLI refuses, before connecting', () => {
  it.each([
    ['a mysql:// URL', { databaseUrl: 'mysql://u:secret-pw@localhost/db' }, 'databaseUrl', 'postgres://'],
    ['a URL with a port beyond 65535', { databaseUrl: 'postgres://u:secret-pw@localhost:99999/db' }, 'databaseUrl', 'not a valid URL'],
    ['a password with a bad percent-encoding', { databaseUrl: 'postgres://u:secret-pw%zz@localhost/db' }, 'databaseUrl', 'percent-encoding'],
    ['a pg_ schema', { databaseUrl: 'postgres://localhost/db', schema: 'pg_jobs' }, 'schema', 'reserved by PostgreSQL'],
    ['activeRoles naming no role', { databaseUrl: 'postgres://localhost/db', activeRoles: [] }, 'activeRoles', 'names no role'],
  ])('%s: NS_CONFIG_INVALID at %s', async (_what, options, path, says) => {
    const err = await rejection(() => createNightshift({ logger: silentLogger(), ...options }));
    expect(err.code).toBe('NS_CONFIG_INVALID');
    expect(err.issues).toContainEqual({ path, message: expect.stringContaining(says) });
    expect(err.message).not.toContain('secret-pw');
  });
});

describe('migrate into a schema that holds an application of its own', () => {
  it('fails with NS_MIGRATION_FAILED naming the migration, leaves the app table alone, applies nothing', async () => {
    await t.sql.query(`CREATE SCHEMA "${t.schema}"; CREATE TABLE "${t.schema}".jobs (id serial PRIMARY KEY, title text); INSERT INTO "${t.schema}".jobs (title) VALUES ('the app''s own')`);
    const ns = t.client();
    const err = await rejection(ns.migrate());
    expect(err.code).toBe('NS_MIGRATION_FAILED');
    expect(err.message).toMatch(/migration 0001 jobs failed on schema/);
    expect(err.hint).toContain('a schema of its own');
    expect((err as NightshiftError & { sqlState?: string }).sqlState).toBe('42P07');
    expect((await t.sql.query(`SELECT title FROM "${t.schema}".jobs`)).rows).toEqual([{ title: "the app's own" }]);
    expect((await t.sql.query(`SELECT to_regclass($1) AS t`, [`"${t.schema}".migrations`])).rows[0].t).toBeNull();
  });
});

describe('serveOps on a port that is taken', () => {
  let holder: Server | undefined;
  afterAll(() => new Promise<void>((r) => (holder ? holder.close(() => r()) : r())));

  it('fails with NS_PORT_UNAVAILABLE, and the client still stops cleanly', async () => {
    holder = createServer();
    const port = await new Promise<number>((resolve) => holder!.listen(0, '127.0.0.1', () => resolve((holder!.address() as { port: number }).port)));
    const ns = t.client();
    const err = await rejection(ns.serveOps({ port }));
    expect(err.code).toBe('NS_PORT_UNAVAILABLE');
    expect(err.message).toBe(`127.0.0.1:${port} is in use by another process\n  hint: ${err.hint}`);
    await ns.stop();
  });
});

describe('a config file without a default export', () => {
  const dir = mkdtempSync(join(tmpdir(), 'nightshift-no-default-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it.each([
    ['TypeScript in a CommonJS package', 'cjs.config.ts', 'export const config = { jobs: [] };\n'],
    ['TypeScript as an ES module', 'esm.config.mts', 'export const config = { jobs: [] };\n'],
    ['JavaScript as an ES module', 'esm.config.mjs', 'export const config = { jobs: [] };\n'],
  ])('%s: says so and names its exports, no "unknown key"', async (_what, name, text) => {
    writeFileSync(join(dir, name), text);
    const err = await rejection(loadConfig(name, dir));
    expect(err.code).toBe('NS_CONFIG_INVALID');
    expect(err.issues).toEqual([{ path: 'default', message: expect.stringContaining('no default export (it exports config)') }]);
  });

  it('a CommonJS file that assigns module.exports is its default', async () => {
    writeFileSync(join(dir, 'assigned.config.cts'), 'module.exports = { worker: { concurrency: 3 } };\n');
    expect((await loadConfig('assigned.config.cts', dir)).config.worker?.concurrency).toBe(3);
  });
});

describe('publish errors are worded for streams', () => {
  const unreachable = () => {
    throw new Error('nothing may be sent for an invalid payload');
  };

  it('an invalid payload names the stream and defineStream, not a kind, defineJob or PostgreSQL', async () => {
    const orders = defineStream({ name: 'orders', payload: z.object({ note: z.string() }) });
    const invalid = await rejection(publishEntry(unreachable, orders, { note: 42 }, undefined));
    const unstorable = await rejection(publishEntry(unreachable, orders, { note: 'a\u0000b' }, undefined));
    for (const err of [invalid, unstorable]) {
      expect(err.code).toBe('NS_PAYLOAD_INVALID');
      expect(err.message).toContain('invalid payload for stream "orders"');
      expect(err.message).toContain('defineStream');
      expect(err.message).not.toMatch(/kind|defineJob|PostgreSQL|written/);
    }
  });

  it('an oversized payload names the stream and its maxPayloadBytes', async () => {
    const blobs = defineStream({ name: 'blobs', payload: z.object({ data: z.string() }), maxPayloadBytes: 100 });
    const err = await rejection(publishEntry(unreachable, blobs, { data: 'x'.repeat(200) }, undefined));
    expect(err.code).toBe('NS_PAYLOAD_TOO_LARGE');
    expect(err.message).toMatch(/payload for stream "blobs" is \d+ bytes, over the limit of 100 bytes/);
    expect(err.hint).toContain("stream's maxPayloadBytes");
    expect(err.message).not.toMatch(/kind|a table/);
  });
});
