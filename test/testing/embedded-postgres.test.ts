// startEmbeddedPostgres (nightshift/testing): a real server on a free port that cleans up after
// itself, and a failed start that says why and leaves no data directory behind.
import { chmodSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { EmbeddedPostgresStartError } from 'nightshift';
import { startEmbeddedPostgres } from 'nightshift/testing';
import pg from 'pg';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';

// A private temp directory for this file, so what the server leaves (or not) is ours to count.
let privateTmp: string;
let savedTmp: string | undefined;
beforeEach(() => {
  savedTmp = process.env.TMPDIR;
  privateTmp = mkdtempSync(join(tmpdir(), 'ns-embedded-test-'));
  chmodSync(privateTmp, 0o755); // as root, initdb runs as the postgres user
  process.env.TMPDIR = privateTmp;
});
afterEach(() => {
  if (savedTmp === undefined) delete process.env.TMPDIR;
  else process.env.TMPDIR = savedTmp;
  rmSync(privateTmp, { recursive: true, force: true });
});

describe('startEmbeddedPostgres', () => {
  it('starts a server on a free loopback port and deletes its data when destroyed', async () => {
    const server = await startEmbeddedPostgres();
    try {
      expect(server.url).toBe(`postgres://postgres:nightshift@127.0.0.1:${server.port}/postgres`);
      expect(server.dataDir.startsWith(privateTmp)).toBe(true);
      const client = new pg.Client({ connectionString: server.url });
      await client.connect();
      const { rows } = await client.query<{ v: string }>('SELECT current_setting($$server_version$$) AS v');
      await client.end();
      expect(rows[0]!.v).toMatch(/^\d+\.\d+/);
    } finally {
      await server.destroy();
    }
    expect(readdirSync(privateTmp).filter((f) => f.startsWith('nightshift-pg-'))).toEqual([]);
  });

  it('fails with NS_EMBEDDED_POSTGRES_FAILED quoting the server when the port is taken, and leaves nothing behind', async () => {
    const blocker: Server = createServer();
    await new Promise<void>((resolve) => blocker.listen(0, '127.0.0.1', resolve));
    const port = (blocker.address() as { port: number }).port;
    try {
      const err = await startEmbeddedPostgres({ port }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(EmbeddedPostgresStartError);
      expect(err).toMatchObject({ code: 'NS_EMBEDDED_POSTGRES_FAILED', message: expect.stringMatching(/failed at start: .*could not (bind|create any TCP\/IP sockets)/i) });
      expect((err as Error).message).toContain('hint: the port is taken');
    } finally {
      await new Promise((resolve) => blocker.close(resolve));
    }
    expect(readdirSync(privateTmp)).toEqual([]);
  });
});
