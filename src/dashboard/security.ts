import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

/** A fresh nonce for one response's scripts and styles. */
export function nonce(): string {
  return randomBytes(16).toString('base64');
}

/**
 * Headers every dashboard response carries: a Content-Security-Policy that runs only the
 * dashboard's own script and style (by nonce), loads nothing from elsewhere, and lets no other
 * site frame it; no caching (pages hold job data); no sniffing; no referrer to other sites.
 */
export function securityHeaders(res: ServerResponse, scriptNonce?: string): void {
  const src = scriptNonce ? `'nonce-${scriptNonce}'` : "'none'";
  res.setHeader(
    'content-security-policy',
    `default-src 'none'; script-src ${src}; style-src 'self' ${src}; img-src 'self' data:; connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'`,
  );
  res.setHeader('x-content-type-options', 'nosniff');
  // Same-origin only: a search's URL (it may name a payload value) never goes to another site.
  res.setHeader('referrer-policy', 'same-origin');
  res.setHeader('x-frame-options', 'DENY');
  res.setHeader('cache-control', 'no-store');
}

/** The CSRF token of a user: an HMAC of their name under the dashboard's secret (no session needed). */
export function csrfToken(secret: Buffer, user: string): string {
  return createHmac('sha256', secret).update(`csrf:${user}`).digest('base64url');
}

/**
 * Why a state-changing request is refused, or null when it may go on. A browser says where a
 * request comes from in `Sec-Fetch-Site`: anything but `same-origin` is refused. A client without
 * it (an old browser, curl) must send an `Origin` naming this host, or none; and every POST must
 * carry the user's token, which a page of another site cannot read.
 */
export function csrfProblem(req: IncomingMessage, secret: Buffer, user: string, token: string | null): string | null {
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined && site !== 'same-origin') return `cross-site request (Sec-Fetch-Site: ${String(site)})`;
  const origin = req.headers.origin;
  if (site === undefined && origin !== undefined) {
    let host: string | undefined;
    try {
      host = origin === 'null' ? undefined : new URL(origin).host;
    } catch {
      host = undefined;
    }
    if (host !== req.headers.host) return 'cross-origin request (Origin does not match Host)';
  }
  if (!token) return 'missing CSRF token';
  const want = Buffer.from(csrfToken(secret, user));
  const got = Buffer.from(token);
  if (got.length !== want.length || !timingSafeEqual(got, want)) return 'bad CSRF token';
  return null;
}
