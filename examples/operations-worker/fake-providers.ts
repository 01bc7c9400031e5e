import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

const listen = async (server: Server) => {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const a = server.address();
  return `http://127.0.0.1:${typeof a === 'object' && a ? a.port : 0}`;
};
const body = async (req: IncomingMessage) => {
  let raw = '';
  for await (const c of req) raw += String(c);
  return raw ? (JSON.parse(raw) as unknown) : undefined;
};
const close = async (server: Server | undefined) => {
  server?.closeAllConnections();
  await new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve()));
};

/** One push message as Expo's `POST /--/api/v2/push/send` takes it. */
export interface PushMessage {
  to: string;
  title: string;
  body: string;
  data: { notification_id: string; [k: string]: unknown };
}

/**
 * A fake of Expo's push API on 127.0.0.1. The HTTP call succeeds even when a message fails: the
 * failure is in the ticket (`{ status: 'error', details: { error: 'DeviceNotRegistered' } }`), as
 * Expo does — tokens in `badTokens` get one. Records every message.
 */
export class FakeExpo {
  readonly messages: PushMessage[] = [];
  readonly badTokens = new Set<string>();
  private server: Server | undefined;

  async start(): Promise<string> {
    this.server = createServer((req, res) => void this.handle(req, res));
    return listen(this.server);
  }

  private async handle(req: IncomingMessage, res: ServerResponse) {
    if (req.method !== 'POST' || req.url !== '/--/api/v2/push/send') return void res.writeHead(404).end();
    const msgs = (await body(req)) as PushMessage[];
    this.messages.push(...msgs);
    const data = msgs.map((m) =>
      this.badTokens.has(m.to)
        ? { status: 'error', message: `"${m.to}" is not a registered push notification recipient`, details: { error: 'DeviceNotRegistered' } }
        : { status: 'ok', id: `ticket-${this.messages.length}` },
    );
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data }));
  }

  stop = () => close(this.server);
}

/** A fake of OpenRouter's chat completions on 127.0.0.1: labels a message, checks the bearer key, and records the most calls in flight at once. */
export class FakeOpenRouter {
  calls = 0;
  inFlight = 0;
  maxInFlight = 0;
  holdMs = 0;
  readonly keys = new Set<string>();
  private server: Server | undefined;

  async start(): Promise<string> {
    this.server = createServer((req, res) => void this.handle(req, res));
    return listen(this.server);
  }

  private async handle(req: IncomingMessage, res: ServerResponse) {
    if (req.method !== 'POST' || req.url !== '/api/v1/chat/completions') return void res.writeHead(404).end();
    this.calls++;
    this.inFlight++;
    this.maxInFlight = Math.max(this.maxInFlight, this.inFlight);
    this.keys.add(String(req.headers.authorization ?? ''));
    await body(req);
    if (this.holdMs) await new Promise((r) => setTimeout(r, this.holdMs));
    this.inFlight--;
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ choices: [{ message: { content: 'affectionate' } }] }));
  }

  stop = () => close(this.server);
}
