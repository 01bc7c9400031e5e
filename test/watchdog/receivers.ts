/**
 * Fake notification receivers on loopback — real servers on real sockets, never mocks of the
 * network path: a webhook receiver (verifies the signature), a Slack-compatible webhook, the
 * Telegram Bot API's sendMessage, and an SMTP server speaking enough of RFC 5321 for nodemailer.
 * Each can be taken down (its port closed: connections are refused) and brought back on the
 * same port.
 */
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { createServer as createTcpServer, type Socket, type Server as TcpServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { verify } from './fixtures/verify-signature.js';

/** One request a fake received. */
export interface Received {
  path: string;
  headers: IncomingMessage['headers'];
  body: string;
  /** Parsed JSON body (webhook, Slack, Telegram), or the mail's headers and text (SMTP). */
  json: Record<string, unknown>;
}

/** A fake receiver: what it got, its address, and a switch to take it down. */
export interface Receiver {
  readonly url: string;
  readonly port: number;
  readonly received: Received[];
  /** Closes the port: deliveries are refused until `up()`. */
  down(): Promise<void>;
  /** Listens again on the same port. */
  up(): Promise<void>;
  close(): Promise<void>;
}

async function listen(server: Server | TcpServer, port: number): Promise<number> {
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  return (server.address() as AddressInfo).port;
}

async function closeHttp(server: Server): Promise<void> {
  if (!server.listening) return;
  server.closeAllConnections();
  await new Promise<void>((resolve) => server.close(() => resolve()));
}

/** An HTTP receiver; `answer` decides the response (default 200 with `ok`). */
async function httpReceiver(answer: (req: Received, res: ServerResponse) => void): Promise<Receiver> {
  const received: Received[] = [];
  const make = () =>
    createHttpServer((req, res) => {
      let body = '';
      req.setEncoding('utf8');
      req.on('data', (c: string) => (body += c));
      req.on('end', () => {
        let json: Record<string, unknown> = {};
        try {
          json = JSON.parse(body) as Record<string, unknown>;
        } catch {
          // Not JSON: kept as the body.
        }
        const r = { path: req.url ?? '', headers: req.headers, body, json };
        received.push(r);
        answer(r, res);
      });
    });
  let server = make();
  const port = await listen(server, 0);
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    received,
    down: () => closeHttp(server),
    async up() {
      server = make();
      await listen(server, port);
    },
    close: () => closeHttp(server),
  };
}

/** A webhook receiver that answers 200 when the signature verifies with `secret`, 401 otherwise. */
export function webhookReceiver(secret: string): Promise<Receiver & { verified: () => Received[] }> {
  return httpReceiver((r, res) => {
    const ok = verify(secret, r.body, String(r.headers['nightshift-signature'] ?? ''));
    res.writeHead(ok ? 200 : 401).end(ok ? 'ok' : 'bad signature');
  }).then((rcv) => Object.assign(rcv, { verified: () => rcv.received.filter((r) => verify(secret, r.body, String(r.headers['nightshift-signature'] ?? ''))) }));
}

/** A Slack-compatible incoming webhook: `ok` to a JSON `{ text }`. */
export function slackReceiver(): Promise<Receiver> {
  return httpReceiver((r, res) => {
    const ok = typeof r.json.text === 'string';
    res.writeHead(ok ? 200 : 400, { 'content-type': 'text/plain' }).end(ok ? 'ok' : 'invalid_payload');
  });
}

/** The Telegram Bot API's sendMessage for one bot token; `limitFirst` answers the first n calls with a 429 and retry_after 1. */
export function telegramReceiver(token: string, options: { limitFirst?: number } = {}): Promise<Receiver> {
  let limited = 0;
  return httpReceiver((r, res) => {
    if (r.path !== `/bot${token}/sendMessage`) {
      res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: false, error_code: 404, description: 'Not Found' }));
      return;
    }
    if (limited < (options.limitFirst ?? 0)) {
      limited++;
      res.writeHead(429, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: false, error_code: 429, description: 'Too Many Requests: retry after 1', parameters: { retry_after: 1 } }));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: true, result: { message_id: 1, chat: { id: r.json.chat_id }, text: r.json.text } }));
  });
}

/**
 * An SMTP server speaking enough for nodemailer: EHLO (no STARTTLS, no AUTH offered unless
 * `auth`), AUTH PLAIN/LOGIN, MAIL FROM, RCPT TO, DATA, RSET, QUIT. Each mail is one Received
 * whose json holds its envelope, headers and text.
 */
export async function smtpReceiver(options: { auth?: { user: string; pass: string } } = {}): Promise<Receiver> {
  const received: Received[] = [];
  const sockets = new Set<Socket>();
  const make = () =>
    createTcpServer((socket) => {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
      socket.setEncoding('utf8');
      const say = (line: string) => socket.write(`${line}\r\n`);
      let buffer = '';
      let data: string[] | undefined;
      let envelope: { from: string; to: string[] } = { from: '', to: [] };
      let authStep: 'user' | 'pass' | undefined;
      let user = '';
      say('220 fake-smtp ready');
      socket.on('data', (chunk: string) => {
        buffer += chunk;
        for (let i = buffer.indexOf('\r\n'); i >= 0; i = buffer.indexOf('\r\n')) {
          const line = buffer.slice(0, i);
          buffer = buffer.slice(i + 2);
          if (data) {
            if (line === '.') {
              const raw = data.join('\r\n');
              const split = raw.indexOf('\r\n\r\n');
              const head = raw.slice(0, split);
              const headers: Record<string, string> = {};
              for (const h of head.replace(/\r\n[ \t]+/g, ' ').split('\r\n')) headers[h.slice(0, h.indexOf(':')).toLowerCase()] = h.slice(h.indexOf(':') + 1).trim();
              received.push({
                path: 'smtp',
                headers,
                body: raw,
                json: { from: envelope.from, to: envelope.to, text: raw.slice(split + 4), subject: headers.subject ?? '', messageId: headers['message-id'] ?? '' },
              });
              data = undefined;
              envelope = { from: '', to: [] };
              say('250 2.0.0 queued');
            } else data.push(line.startsWith('..') ? line.slice(1) : line);
            continue;
          }
          if (authStep === 'user') {
            user = Buffer.from(line, 'base64').toString();
            authStep = 'pass';
            say(`334 ${Buffer.from('Password:').toString('base64')}`);
            continue;
          }
          if (authStep === 'pass') {
            authStep = undefined;
            const pass = Buffer.from(line, 'base64').toString();
            say(user === options.auth?.user && pass === options.auth.pass ? '235 2.7.0 authenticated' : '535 5.7.8 authentication failed');
            continue;
          }
          const verb = line.slice(0, 4).toUpperCase();
          if (verb === 'EHLO') {
            socket.write(`250-fake-smtp\r\n${options.auth ? '250-AUTH PLAIN LOGIN\r\n' : ''}250 8BITMIME\r\n`);
          } else if (verb === 'HELO') say('250 fake-smtp');
          else if (verb === 'AUTH') {
            const [, mech, initial] = line.split(' ');
            if (mech?.toUpperCase() === 'PLAIN' && initial) {
              const [, u, p] = Buffer.from(initial, 'base64').toString().split('\u0000');
              say(u === options.auth?.user && p === options.auth?.pass ? '235 2.7.0 authenticated' : '535 5.7.8 authentication failed');
            } else if (mech?.toUpperCase() === 'LOGIN') {
              authStep = 'user';
              say(`334 ${Buffer.from('Username:').toString('base64')}`);
            } else say('504 unrecognised authentication type');
          } else if (verb === 'MAIL') {
            envelope.from = /<([^>]*)>/.exec(line)?.[1] ?? '';
            say('250 2.1.0 ok');
          } else if (verb === 'RCPT') {
            envelope.to.push(/<([^>]*)>/.exec(line)?.[1] ?? '');
            say('250 2.1.5 ok');
          } else if (verb === 'DATA') {
            data = [];
            say('354 end data with <CR><LF>.<CR><LF>');
          } else if (verb === 'RSET') {
            envelope = { from: '', to: [] };
            say('250 ok');
          } else if (verb === 'NOOP') say('250 ok');
          else if (verb === 'QUIT') {
            say('221 bye');
            socket.end();
          } else say('502 command not implemented');
        }
      });
      socket.on('error', () => undefined);
    });
  let server = make();
  const port = await listen(server, 0);
  const close = async () => {
    if (!server.listening) return;
    for (const s of sockets) s.destroy();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return {
    url: `smtp://127.0.0.1:${port}`,
    port,
    received,
    down: close,
    async up() {
      server = make();
      await listen(server, port);
    },
    close,
  };
}
