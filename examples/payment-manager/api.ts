// The payment manager's HTTP API (role `api`), enough of it to drive the workers: create an
// intent, confirm it, read it. Confirming reserves the amount at the ledger (the two-phase
// pre-flight), then in ONE transaction moves the intent to PROCESSING and enqueues its next step —
// the outbox's post_pending, or for a PSP top-up the PSP row and its job — so the work exists
// exactly when the state change does. Every job of an intent carries trace id = intent id.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Nightshift } from '../../src/index.js';
import type { pmApp } from './app.js';
import { ledgerClient } from './providers.js';
import type { OperationType } from './store.js';
import { intentTrace, traceIdOf } from './trace.js';

const TYPES: OperationType[] = ['INTERNAL_P2P', 'INVOICE_PAYMENT', 'PSP_TOPUP'];

/** The API server (not yet listening). */
export function pmApi(ns: Nightshift, app: ReturnType<typeof pmApp>): Server {
  const { store, settings, outbox, psp } = app;
  const ledger = ledgerClient(settings.ledgerUrl);
  const reply = (res: ServerResponse, status: number, body: unknown, traceId?: string) =>
    void res.writeHead(status, { 'content-type': 'application/json', ...(traceId ? { traceparent: `00-${traceId}-${randomUUID().replace(/-/g, '').slice(0, 16)}-01` } : {}) }).end(JSON.stringify(body));

  const create = async (body: Record<string, unknown>, res: ServerResponse) => {
    const type = body.operationType as OperationType;
    const amount = body.amountSatang;
    if (!TYPES.includes(type)) return reply(res, 400, { error: `operationType must be one of ${TYPES.join(', ')}` });
    if (!Number.isInteger(amount) || (amount as number) <= 0) return reply(res, 400, { error: 'amountSatang must be a positive whole number' });
    const expiresInSec = type === 'INVOICE_PAYMENT' ? Number(body.expiresInSec ?? 900) : null;
    const id = randomUUID();
    await store.createIntent(ns.db, { id, type, amountSatang: amount as number, psp: type === 'PSP_TOPUP' ? String(body.psp ?? 'IPPS') : null, expiresInSec });
    reply(res, 201, { id, status: 'CREATED' }, traceIdOf(id));
  };

  const confirm = async (id: string, res: ServerResponse) => {
    const intent = await store.intent(ns.db, id);
    if (!intent) return reply(res, 404, { error: `no intent ${id}` });
    if (intent.status !== 'CREATED') return reply(res, 409, { error: `intent ${id} is ${intent.status}` }, traceIdOf(id));
    const pendingId = randomUUID();
    const reserved = await ledger.transfer({ id: pendingId, flags: 'pending', amountSatang: Number(intent.amount_satang) }, AbortSignal.timeout(10_000));
    if (reserved !== 'ok') return reply(res, 502, { error: `the ledger refused the reservation: ${reserved}` }, traceIdOf(id));
    const traceContext = intentTrace(id);
    const moved = await ns.transaction(async (tx) => {
      const row = await store.startProcessing(tx, id, pendingId);
      if (!row) return undefined;
      if (row.operation_type === 'PSP_TOPUP') {
        const rowId = await store.createPspRow(tx, id, row.psp ?? 'IPPS');
        await ns.enqueue(psp, { rowId }, { db: tx, traceContext });
      } else {
        await ns.enqueue(outbox.outboxEvent, { intentId: id, action: 'post_pending' }, { db: tx, traceContext });
      }
      return row;
    });
    if (!moved) {
      // Expired or confirmed meanwhile: the reservation never became visible, so release it here.
      await ledger.transfer({ id: randomUUID(), flags: 'void_pending', pendingId }, AbortSignal.timeout(10_000));
      const now = await store.intent(ns.db, id);
      return reply(res, 409, { error: `intent ${id} is ${now?.status ?? 'gone'}` }, traceIdOf(id));
    }
    reply(res, 202, { id, status: 'PROCESSING' }, traceIdOf(id));
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    let raw = '';
    for await (const chunk of req) raw += String(chunk);
    let body: Record<string, unknown> = {};
    try {
      body = raw ? (JSON.parse(raw) as Record<string, unknown>) : {};
    } catch {
      return reply(res, 400, { error: 'the body is not JSON' });
    }
    const m = /^\/intents\/([0-9a-f-]{36})(\/confirm)?$/.exec(url.pathname);
    if (req.method === 'POST' && url.pathname === '/intents') return create(body, res);
    if (req.method === 'POST' && m?.[2]) return confirm(m[1]!, res);
    if (req.method === 'GET' && m && !m[2]) {
      const intent = await store.intent(ns.db, m[1]!);
      return intent ? reply(res, 200, intent, traceIdOf(intent.id)) : reply(res, 404, { error: `no intent ${m[1]}` });
    }
    if (req.method === 'GET' && url.pathname === '/healthz') return reply(res, 200, { ok: true });
    reply(res, 404, { error: 'not found' });
  };

  return createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) reply(res, 500, { error: err instanceof Error ? err.message : String(err) });
    });
  });
}
