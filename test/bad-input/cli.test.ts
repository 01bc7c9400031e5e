import { beforeAll, describe, expect, it } from 'vitest';
import { cliInProcess as cli } from '../cli/in-process.js';
import { useTestDatabase } from '../support/db.js';

// Entry point: the `nightshift` CLI (runCli in this process — what the binary adds is in
// test/cli/binary.test.ts — on the CLI tests' app in test/fixtures/cli-app). A bad flag value or
// payload exits 2 with the error's code and writes nothing. Cases already in test/cli/cli.test.ts
// are not repeated here; the table keeps one case per kind of mistake.

const t = useTestDatabase('bad_cli');
// The config reads NS_SCHEMA from process.env (the CLI runs in this process).
process.env.NS_SCHEMA = t.schema;
const env = () => ({ DATABASE_URL: t.url });
const run = (args: string[], extra: Record<string, string | undefined> = {}) => cli(args, { env: { ...env(), ...extra } });
let before = 0;

beforeAll(async () => {
  const r = await run(['migrate']);
  expect(r.code, r.stderr).toBe(0);
  before = await t.jobCount();
});

const enqueue = (...flags: string[]) => ['enqueue', 'send-email', '--payload', '{"to":"a@example.com"}', ...flags];

const cases: [what: string, args: string[], code: number, stderr: string][] = [
  ['--priority out of range', enqueue('--priority', '5000'), 2, 'NS_OPTIONS_INVALID'],
  ['--run-at without a zone', enqueue('--run-at', '2026-01-01 10:00'), 2, 'ambiguous'],
  ['--run-at on 30 February', enqueue('--run-at', '2026-02-30T00:00:00Z'), 2, 'not a day of the calendar'],
  ['--max-attempts 0', enqueue('--max-attempts', '0'), 2, 'maxAttempts'],
  ['--delay-ms negative', enqueue('--delay-ms', '-5'), 2, 'delayMs'],
  ['an empty --dedupe-key', enqueue('--dedupe-key', ''), 2, 'dedupeKey'],
  ['an over-long --dedupe-key', enqueue('--dedupe-key', 'k'.repeat(600)), 2, 'dedupeKey'],
  ['--queue with SQL metacharacters', enqueue('--queue', "x'; DROP TABLE jobs; --"), 2, 'queue'],
  ['a payload with a NUL escape', ['enqueue', 'daily-digest', '--payload', '{"day":"a\\u0000b"}'], 2, 'NS_PAYLOAD_INVALID'],
  ['a payload with a lone surrogate escape', ['enqueue', 'daily-digest', '--payload', '{"day":"\\ud800"}'], 2, 'NS_PAYLOAD_INVALID'],
  ['an empty kind', ['enqueue', ' ', '--payload', '{}'], 2, 'kind must not be empty'],
  ['a kind with SQL metacharacters', ['enqueue', "x'; DROP TABLE jobs; --", '--payload', '{}'], 2, 'NS_UNKNOWN_KIND'],
  ['jobs show with a word for an id', ['jobs', 'show', 'abc'], 2, 'NS_OPTIONS_INVALID'],
  ['jobs show with an id beyond bigint', ['jobs', 'show', '9999999999999999999'], 2, 'NS_OPTIONS_INVALID'],
  ['jobs list with an unknown state', ['jobs', 'list', '--state', 'bogus'], 2, 'NS_OPTIONS_INVALID'],
  ['jobs list with a kind of SQL metacharacters', ['jobs', 'list', '--kind', "x' OR '1'='1"], 2, 'NS_OPTIONS_INVALID'],
  ['schedules trigger with a NUL in the payload', ['schedules', 'trigger', 'nightly-digest', '--payload', '{"day":"\\u0000"}'], 2, 'NS_PAYLOAD_INVALID'],
  ['a schema with SQL metacharacters', ['--schema', 'x"; DROP SCHEMA public; --', 'jobs', 'list'], 2, 'NS_CONFIG_INVALID'],
  ['a database URL of another scheme', ['--database-url', 'mysql://localhost/db', 'jobs', 'list'], 2, 'must start with postgres://'],
  // Bug 12 of issue 11: typed usage errors where a value was silently ignored, or a raw error came out.
  ['a database URL with a port beyond 65535', ['--database-url', 'postgres://u:pw@localhost:99999/db', 'jobs', 'list'], 2, 'NS_USAGE: the database URL is not a valid URL'],
  ['an empty --schema', ['--schema', '', 'jobs', 'list'], 2, 'NS_USAGE: --schema is empty'],
  ['--roles naming no role', ['worker', '--roles', ','], 2, 'NS_USAGE: --roles "," names no role'],
  ['a kind one typo from a defined one', ['enqueue', 'send-emial', '--payload', '{}'], 2, 'did you mean "send-email"?'],
  ['alerts with a word for --limit', ['alerts', '--limit', 'ten'], 2, 'NS_USAGE: --limit must be an integer'],
  ['alerts --before with SQL metacharacters', ['alerts', '--before', "1' OR '1'='1"], 2, 'NS_OPTIONS_INVALID'],
  ['alerts ack with a blank reason', ['alerts', 'ack', '1', '--reason', '  '], 2, 'NS_USAGE: --reason is required'],
];

describe('nightshift CLI: bad input', () => {
  // One after another: the leak guard counts what each test leaves running, which concurrent tests would blur.
  it.each(cases.map(([what, args, code, stderr]) => ({ what, args, code, stderr })))('$what: exit $code, nothing written', async ({ args, code, stderr }) => {
    const r = await run(args);
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(code);
    expect(r.stderr).toContain(stderr);
  });
});

describe('nightshift CLI: bad input from the environment', () => {
  it('NIGHTSHIFT_ROLES of commas only is a usage error; empty, it means every role', async () => {
    const commas = await run(['worker'], { NIGHTSHIFT_ROLES: ' , ' });
    expect(commas.code, commas.stderr).toBe(2);
    expect(commas.stderr).toContain('NIGHTSHIFT_ROLES " , " names no role');
    // Empty counts as unset: everything, which here needs the classifier's key (so it stops at once).
    const empty = await run(['worker'], { NIGHTSHIFT_ROLES: '', OPENROUTER_API_KEY: undefined });
    expect(empty.code, empty.stderr).toBe(2);
    expect(empty.stderr).toContain('NS_MISSING_ENV');
  });
});

describe('nightshift CLI: after the bad calls', () => {
  it('no job was written', async () => {
    expect(await t.jobCount()).toBe(before);
  });
});
