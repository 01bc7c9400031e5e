// The payment manager's clients of what is outside its database: the ledger (TigerBeetle's
// createTransfers), the PSP driver (query, confirm, inquire) and the status / notification hub.
// Every call has a deadline; the handler's abort signal (timeout, cancel, lost lease, shutdown) cuts it short too.
import type { TransferRequest, TransferResult } from './fake-ledger.js';
import type { InquiryOutcome } from './fake-psp.js';

const post = async (base: string | undefined, name: string, path: string, body: unknown, signal: AbortSignal, headers: Record<string, string> = {}) => {
  if (!base) throw new Error(`${name} is not set`);
  const res = await fetch(new URL(path, base), {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-pid': String(process.pid), ...headers },
    body: JSON.stringify(body),
    signal,
  });
  if (!res.ok) throw new Error(`${new URL(base).host}${path} answered ${res.status}`);
  return res;
};

/** The ledger: one transfer at a time, its result as TigerBeetle reports it. */
export function ledgerClient(url: string | undefined) {
  return {
    async transfer(t: TransferRequest, signal: AbortSignal): Promise<TransferResult> {
      const res = await post(url, 'LEDGER_URL', '/transfers', [t], AbortSignal.any([signal, AbortSignal.timeout(10_000)]));
      return ((await res.json()) as TransferResult[])[0]!;
    },
  };
}

/** The PSP driver (seed 002's IPPS): each call bounded by the row's lease. */
export function pspDriver(url: string | undefined, psp: string) {
  const call = async <T>(path: string, body: unknown, signal: AbortSignal) => (await (await post(url, `PSP_${psp}_URL`, path, body, signal)).json()) as T;
  return {
    query: (b: { rqUID: string; intentId: string; amountSatang: number }, signal: AbortSignal) => call<{ status: 'ok' | 'declined' }>('/query', b, signal),
    confirm: (b: { rqUID: string; intentId: string }, signal: AbortSignal) => call<{ status: 'accepted' }>('/confirm', b, signal),
    inquire: (b: { rqUID: string }, signal: AbortSignal) => call<{ status: InquiryOutcome }>('/inquire', b, signal),
  };
}

/** publishStatus / publishPaymentNotification: keyed by the event, so a redelivery after a crash is applied once. */
export function hubClient(url: string | undefined) {
  return {
    async publish(channel: 'status' | 'notifications', key: string, body: unknown, traceparent: string | undefined, signal: AbortSignal): Promise<void> {
      await post(url, 'NOTIFY_URL', `/${channel}`, body, AbortSignal.any([signal, AbortSignal.timeout(5_000)]), {
        'idempotency-key': key,
        ...(traceparent ? { traceparent } : {}),
      });
    },
  };
}
