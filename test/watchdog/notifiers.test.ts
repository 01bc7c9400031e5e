import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import {
  createLogger,
  defineCheck,
  emailNotifier,
  isNightshiftError,
  signWebhook,
  slackNotifier,
  telegramNotifier,
  verifyWebhookSignature,
  webhookNotifier,
  type CheckStatus,
  type Notifier,
} from '../../src/index.js';
import { useTestDatabase } from '../support/db.js';
import { waitFor } from '../support/wait.js';
import { slackReceiver, smtpReceiver, telegramReceiver, webhookReceiver, type Receiver } from './receivers.js';

const t = useTestDatabase('wdn');
t.migrateBeforeAll();
const q = () => `"${t.schema}"`;
const open: Receiver[] = [];
afterEach(async () => {
  await Promise.all(open.splice(0).map((r) => r.close()));
});
const keep = <R extends Receiver>(r: R) => (open.push(r), r);

/** A check only a test runs (its schedule ticks once a year), whose status the test sets. */
function flag(name: string) {
  const state = { status: 'ok' as CheckStatus };
  return { state, check: defineCheck({ name, cron: '0 0 1 1 *', run: () => ({ status: state.status, message: `the flag is ${state.status}`, details: { flag: state.status } }) }) };
}

/** A started client delivering notifications fast (back-off of 100 to 300 ms). */
function client(name: string, notifiers: Notifier[], check: ReturnType<typeof flag>['check'], extra: { lines?: string[] } = {}) {
  return t.client({
    checks: [check],
    watchdog: { builtins: false, notifiers, delivery: { maxAttempts: 50, backoff: { initialMs: 100, maxMs: 300, jitter: 0 } } },
    pollIntervalMs: 50,
    owner: name,
    ...(extra.lines ? { logger: createLogger({ level: 'debug', destination: { write: (l: string) => extra.lines!.push(l) } }) } : {}),
  });
}

describe('notifiers deliver to receivers on loopback', () => {
  it('webhook: a signed JSON body the receiver verifies, with the stable id in a header', async () => {
    const secret = randomBytes(16).toString('hex');
    const rcv = keep(await webhookReceiver(secret));
    const { state, check } = flag('hooked');
    const ns = client('hook', [webhookNotifier({ url: `${rcv.url}/alerts`, secret })], check);
    await ns.start();
    state.status = 'critical';
    await ns.runCheck('hooked');
    await waitFor('the opened notification', () => rcv.verified().length === 1);
    const [got] = rcv.received;
    expect(got!.path).toBe('/alerts');
    expect(got!.json).toMatchObject({
      event: 'opened',
      sequence: 1,
      alert: { check: 'hooked', subject: '', level: 'critical', message: 'the flag is critical', details: { flag: 'critical' }, acknowledged: false },
    });
    expect(got!.headers['nightshift-notification-id']).toBe(got!.json.id);
    expect(got!.headers['content-type']).toBe('application/json');
    // The exported verifier agrees with the snippet of the docs; a tampered body or another secret does not verify.
    const header = String(got!.headers['nightshift-signature']);
    expect(verifyWebhookSignature({ secret, body: got!.body, header })).toBe(true);
    expect(verifyWebhookSignature({ secret, body: got!.body.replace('critical', 'warning'), header })).toBe(false);
    expect(verifyWebhookSignature({ secret: 'other', body: got!.body, header })).toBe(false);
    // A signature made ten minutes ago is a replay.
    const old = signWebhook(secret, got!.body, Date.now() / 1000 - 600);
    expect(verifyWebhookSignature({ secret, body: got!.body, header: old })).toBe(false);
  });

  it('a receiver that is down for a while gets every notification afterwards, each id once verified', async () => {
    const secret = 'down-for-a-while';
    const rcv = keep(await webhookReceiver(secret));
    await rcv.down();
    const { state, check } = flag('outage');
    const ns = client('outage', [webhookNotifier({ url: `${rcv.url}/alerts`, secret })], check);
    await ns.start();
    state.status = 'warning';
    await ns.runCheck('outage');
    state.status = 'critical';
    await ns.runCheck('outage');
    state.status = 'ok';
    await ns.runCheck('outage');
    // Every notification has failed at least twice against the closed port before it comes back.
    const attempts = async () =>
      (await t.sql.query(`SELECT attempt, state::text, errors FROM ${q()}.jobs_all WHERE kind = 'nightshift.notify' AND payload->'notification'->'alert'->>'check' = 'outage'`)).rows as {
        attempt: number;
        state: string;
        errors: { message: string }[];
      }[];
    await waitFor('three notifications, each retried', async () => {
      const rows = await attempts();
      return rows.length === 3 && rows.every((r) => r.attempt >= 2 && r.state === 'available');
    });
    const errors = (await attempts()).flatMap((r) => r.errors.map((e) => e.message));
    expect(errors.every((m) => m.includes('could not be reached at host 127.0.0.1') && !m.includes('/alerts'))).toBe(true);
    await rcv.up();
    await waitFor('every notification delivered', async () => (await attempts()).every((r) => r.state === 'completed'));
    const [alert] = await ns.listAlerts({ check: 'outage' });
    const ids = rcv.verified().map((r) => r.json.id as string);
    expect(new Set(ids)).toEqual(new Set([`${alert!.id}.1`, `${alert!.id}.2`, `${alert!.id}.3`]));
    expect(
      rcv
        .verified()
        .map((r) => `${r.json.sequence as number}:${r.json.event as string}`)
        .sort(),
    ).toEqual(['1:opened', '2:changed', '3:resolved']);
    const resolved = rcv.verified().find((r) => r.json.event === 'resolved')!.json.alert as { durationMs: number; resolvedAt: string };
    expect(resolved.durationMs).toBe(alert!.durationMs);
  });

  it('Slack-compatible: a { text } with the title in bold, Slack’s special characters escaped', async () => {
    const rcv = keep(await slackReceiver());
    const check = defineCheck({ name: 'slacked', cron: '0 0 1 1 *', run: () => ({ status: 'warning', message: 'queue <mail> & co lag' }) });
    const ns = client('slack', [slackNotifier({ url: `${rcv.url}/services/T000/B000/XXXX` })], check);
    await ns.start();
    await ns.runCheck('slacked');
    await waitFor('the Slack message', () => rcv.received.length === 1);
    const text = rcv.received[0]!.json.text as string;
    expect(text.split('\n')[0]).toBe('*[WARNING] slacked: opened*');
    expect(text).toContain('queue &lt;mail&gt; &amp; co lag');
  });

  it('Telegram: sendMessage to the chat through the Bot API at its base URL, waiting out a 429’s retry_after; the token never leaves the request path', async () => {
    const token = `123456:${randomBytes(12).toString('hex')}`;
    const rcv = keep(await telegramReceiver(token, { limitFirst: 1 }));
    const { state, check } = flag('telegrammed');
    const ns = client('tg', [telegramNotifier({ token, chatId: -100123, baseUrl: rcv.url })], check);
    await ns.start();
    state.status = 'critical';
    await ns.runCheck('telegrammed');
    await waitFor('the message after the 429', () => rcv.received.length === 2);
    const sent = rcv.received[1]!.json as { chat_id: number; text: string; disable_web_page_preview: boolean };
    expect(sent.chat_id).toBe(-100123);
    expect(sent.text.split('\n')[0]).toBe('[CRITICAL] telegrammed: opened');
    expect(sent.text).toContain('the flag is critical');
    const job = async () =>
      (await t.sql.query(`SELECT state::text, attempt, errors FROM ${q()}.jobs_all WHERE kind = 'nightshift.notify' AND payload->'notification'->'alert'->>'check' = 'telegrammed'`)).rows[0] as {
        state: string;
        attempt: number;
        errors: { message: string }[];
      };
    await waitFor('the job to complete', async () => (await job()).state === 'completed');
    const done = await job();
    expect(done.attempt).toBe(2);
    expect(done.errors[0]!.message).toContain('asked to retry in 1 s (429)');
    expect(JSON.stringify(done)).not.toContain(token);
  });

  it('e-mail over SMTP (nodemailer on a real socket): subject, text, Message-ID from the stable id, the login', async () => {
    const auth = { user: 'alerts', pass: randomBytes(8).toString('hex') };
    const rcv = keep(await smtpReceiver({ auth }));
    const { state, check } = flag('mailed');
    const ns = client(
      'mail',
      [emailNotifier({ smtp: { host: '127.0.0.1', port: rcv.port, user: auth.user, password: auth.pass }, from: 'nightshift@example.com', to: ['oncall@example.com', 'ops@example.com'] })],
      check,
    );
    await ns.start();
    state.status = 'warning';
    await ns.runCheck('mailed');
    await waitFor('the mail', () => rcv.received.length === 1);
    const [alert] = await ns.listAlerts({ check: 'mailed' });
    const mail = rcv.received[0]!.json as { from: string; to: string[]; subject: string; text: string; messageId: string };
    expect(mail.from).toBe('nightshift@example.com');
    expect(mail.to).toEqual(['oncall@example.com', 'ops@example.com']);
    expect(mail.subject).toBe('[WARNING] mailed: opened');
    expect(mail.messageId).toBe(`<${alert!.id}.1@nightshift>`);
    expect(mail.text).toContain('the flag is warning');
  });

  it('e-mail with a wrong password fails the attempt (retried), and the password is in no error', async () => {
    const auth = { user: 'alerts', pass: 'right-password' };
    const rcv = keep(await smtpReceiver({ auth }));
    const wrong = `wrong-${randomBytes(6).toString('hex')}`;
    const lines: string[] = [];
    const { state, check } = flag('mail-denied');
    const ns = client('mail-denied', [emailNotifier({ smtp: { host: '127.0.0.1', port: rcv.port, user: auth.user, password: wrong }, from: 'a@example.com', to: 'b@example.com' })], check, { lines });
    await ns.start();
    state.status = 'critical';
    await ns.runCheck('mail-denied');
    const job = async () =>
      (await t.sql.query(`SELECT attempt, errors FROM ${q()}.jobs_all WHERE kind = 'nightshift.notify' AND payload->'notification'->'alert'->>'check' = 'mail-denied'`)).rows[0] as
        { attempt: number; errors: { message: string; code?: string }[] } | undefined;
    await waitFor('two failed attempts', async () => ((await job())?.errors?.length ?? 0) >= 2);
    const j = (await job())!;
    expect(j.errors[0]!.message).toMatch(/^notifier "email": email "email" via 127\.0\.0\.1:\d+ failed \(EAUTH, SMTP 535\)/);
    expect(j.errors[0]!.code).toBe('NS_NOTIFIER_FAILED');
    expect(JSON.stringify(j) + lines.join('\n')).not.toContain(wrong);
    expect(rcv.received).toEqual([]);
  });
});

describe('incomplete notifiers and bad options', () => {
  it('a notifier given an unset variable loads, and a process that delivers notifications refuses to start naming it', async () => {
    const n = telegramNotifier({ token: undefined, chatId: process.env.NO_SUCH_CHAT_VARIABLE });
    expect(n.missing).toEqual(['token', 'chatId']);
    expect(JSON.stringify(n)).toBe('{"type":"telegram","name":"telegram"}');
    const { check } = flag('incomplete');
    const ns = t.client({ checks: [check], watchdog: { builtins: false, notifiers: [n] } });
    const err = await ns.start().catch((e: unknown) => e);
    expect(isNightshiftError(err) && err.code).toBe('NS_CONFIG_INVALID');
    expect((err as { issues: { path: string; message: string }[] }).issues).toEqual([
      { path: 'watchdog.notifiers.telegram', message: expect.stringContaining('telegram notifier "telegram" lacks token, chatId') },
    ]);
    // A process whose roles deliver nothing starts with the same config.
    const api = t.client({ checks: [check], watchdog: { builtins: false, notifiers: [n] }, roles: { api: {} }, activeRoles: ['api'] });
    await api.start();
  });

  it.each([
    ['a webhook URL that is not http(s)', () => webhookNotifier({ url: 'ftp://x/y', secret: 's' }), 'url'],
    ['a webhook URL that is not a URL', () => webhookNotifier({ url: 'not a url', secret: 's' }), 'url'],
    ['a misspelt option', () => slackNotifier({ url: 'https://hooks.example/x', timeout: 5 } as never), 'timeout'],
    ['a timeout of 0', () => slackNotifier({ url: 'https://hooks.example/x', timeoutMs: 0 }), 'timeoutMs'],
    ['a token that is not one', () => telegramNotifier({ token: 'has spaces in it', chatId: 1 }), 'token'],
    ['a chat id that is an object', () => telegramNotifier({ token: '1:a', chatId: {} as never }), 'chatId'],
    ['an SMTP port out of range', () => emailNotifier({ smtp: { host: 'h', port: 70_000 }, from: 'a@b', to: 'c@d' }), 'smtp.port'],
    ['a recipient that is no address', () => emailNotifier({ smtp: { host: 'h' }, from: 'a@b', to: ['nobody'] }), 'to'],
    ['a name with a space', () => webhookNotifier({ url: 'https://x', secret: 's', name: 'two words' }), 'name'],
  ])('refuses %s, naming the field and quoting no URL', (_what, make, path) => {
    let err: unknown;
    try {
      make();
    } catch (e) {
      err = e;
    }
    expect(isNightshiftError(err) && err.code).toBe('NS_CONFIG_INVALID');
    expect((err as { issues: { path: string }[] }).issues.map((i) => i.path)).toContain(path);
    expect(String((err as Error).message)).not.toContain('hooks.example/x');
  });
});
