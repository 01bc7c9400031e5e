import { afterEach, describe, expect, it } from 'vitest';
import { describeError } from '../../src/jobs/error-text.js';
import { DaemonRunner } from '../../src/leadership/daemon-runner.js';
import { defineDaemon } from '../../src/leadership/define-daemon.js';
import { elideDataUrls } from '../../src/telemetry/data-urls.js';
import { createLogger } from '../../src/telemetry/logger.js';
import { openDatabase } from '../leadership/helpers.js';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';

// Bug 11 of issue 11: a frame of code loaded from a `data:` URL quotes the code (a transpiled
// config with its secrets). Whatever loaded it, no such URL reaches a stored error or a log line;
// and a daemon's failure is logged without its message unless `logErrorMessages` is on.

const SECRET = 'CANARY-SECRET-7f3a';
const source = encodeURIComponent(`const key = "${SECRET}"; (() => { throw new Error("x") })()`);
const frame = `data:text/javascript,${source}?filePath=%2Fapp%2Fnightshift.config.ts`;
const stack = `Error: boom\n    at run (${frame}:3:17)\n    at ${frame}:1:1\n    at next (/app/src/worker.ts:10:2)`;

function withStack(message: string): Error {
  const err = new Error(message);
  err.stack = stack;
  return err;
}

describe('data: URLs never reach a stored error or a log line', () => {
  it('a stored stack keeps its frames and their positions, not the URL', () => {
    const d = describeError(withStack('boom'));
    expect(d.stack).not.toContain(SECRET);
    expect(d.stack).not.toContain('filePath');
    expect(d.stack).toMatch(/at run \(data:text\/javascript,\[\d+ characters elided\]:3:17\)/);
    expect(d.stack).toContain('at next (/app/src/worker.ts:10:2)');
  });

  it('a stored message and a thrown non-Error lose their data: URLs too', () => {
    expect(describeError(new Error(`cannot load ${frame}`)).message).toBe(`cannot load data:text/javascript,[${frame.length} characters elided]`);
    expect(describeError(`thrown from ${frame}`).message).not.toContain(SECRET);
  });

  it('text without data: URLs is left as it is', () => {
    expect(elideDataUrls('metadata: none at f (/a.ts:1:2)')).toBe('metadata: none at f (/a.ts:1:2)');
    expect(elideDataUrls('no url here')).toBe('no url here');
  });

  it('the default logger elides them from every line, which stays valid JSON', () => {
    const lines: string[] = [];
    const logger = createLogger({ level: 'info', destination: { write: (l: string) => lines.push(l) } });
    logger.error({ err: withStack('boom'), where: { url: frame } }, `failed at ${frame}`);
    expect(lines).toHaveLength(1);
    expect(lines[0]).not.toContain(SECRET);
    const line = JSON.parse(lines[0]!) as { err: { stack: string }; where: { url: string }; msg: string };
    expect(line.err.stack).toContain('at next (/app/src/worker.ts:10:2)');
    expect(line.where.url).toMatch(/^data:text\/javascript,\[\d+ characters elided\]$/);
  });
});

const t = useTestDatabase('data_url');
t.migrateBeforeAll();
const cleanups: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const c of cleanups.splice(0).reverse()) await c();
});

async function daemonFailureLine(logErrorMessages: boolean | undefined): Promise<Record<string, unknown>> {
  const lines: string[] = [];
  const logger = createLogger({ level: 'info', destination: { write: (l: string) => lines.push(l) } });
  const { database, close } = openDatabase(t.url, t.schema);
  cleanups.push(close);
  const daemon = defineDaemon({
    name: `failing-${logErrorMessages}`,
    everyMs: 60_000,
    run: async () => {
      const err = new Error(`provider rejected ${SECRET}`) as Error & { code: string };
      err.code = 'E_PROVIDER';
      throw err;
    },
  });
  const runner = new DaemonRunner({ database, daemons: [daemon], logger, ttlMs: 1_500, retryMs: 100, ...(logErrorMessages !== undefined ? { logErrorMessages } : {}) });
  cleanups.push(() => runner.stop());
  await runner.start();
  const line = await waitFor('the failure to be logged', () => lines.find((l) => l.includes('daemon run failed')));
  return JSON.parse(line) as Record<string, unknown>;
}

describe('daemon failures follow logErrorMessages', () => {
  it('by default: the error name and code, no message and no stack', async () => {
    const line = await daemonFailureLine(undefined);
    expect(JSON.stringify(line)).not.toContain(SECRET);
    expect(line).toMatchObject({ daemon: 'failing-undefined', error: { name: 'Error', code: 'E_PROVIDER' } });
    expect(JSON.stringify(line)).not.toContain('stack');
  });

  it('with logErrorMessages: the message and the stack', async () => {
    const line = await daemonFailureLine(true);
    expect(line).toMatchObject({ daemon: 'failing-true', error: { name: 'Error', code: 'E_PROVIDER', message: `provider rejected ${SECRET}` } });
    expect((line.error as { stack: string }).stack).toContain('data-urls.test.ts');
  });
});
