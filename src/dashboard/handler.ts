import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { isNightshiftError, OptionsInvalidError, type Nightshift } from '../index.js';
import { CLIENT_CSS, CLIENT_JS } from './assets.js';
import { authenticate, checkAuth, type DashboardAuth } from './auth.js';
import { BulkRunner } from './bulk.js';
import { html, type Html } from './html.js';
import { layout } from './layout.js';
import { LiveHub, type HubStats } from './live-hub.js';
import { hostName, isLoopback } from './loopback.js';
import { matchPath, type DashboardPage, type DashboardSettings, type LoadContext, type ViewContext } from './page.js';
import { builtInPages } from './pages/index.js';
import { can, PERMISSIONS, type DashboardUser, type Permission } from './permissions.js';
import { csrfProblem, csrfToken, nonce, securityHeaders } from './security.js';

/** A logger the dashboard writes its request lines to (pino's shape): never payloads, queries or error messages. */
export interface DashboardLogger {
  info(fields: Record<string, unknown>, msg: string): void;
  warn(fields: Record<string, unknown>, msg: string): void;
}

/** How the dashboard is set up. */
export interface DashboardOptions {
  /** Who may use it (see docs/dashboard.md). Without it, only a loopback listener is allowed. */
  auth?: DashboardAuth;
  /** Permissions of everyone when there is no `auth` (loopback only). Default: all. */
  anonymousPermissions?: Permission[];
  /** The path the dashboard is mounted under (`/ops/jobs`); default none. */
  basePath?: string;
  /** Key of the CSRF tokens; default random per process (tokens then change on restart). */
  secret?: string;
  /** The newest jobs a search looks at when finished jobs may match. Default 100,000. */
  searchWindow?: number;
  /** Counts stop here and show "more than N". Default 10,000. */
  countCap?: number;
  /** More pages (pipelines, alerts, your own), after the built-in ones. */
  pages?: DashboardPage[];
  logger?: DashboardLogger;
}

/** A dashboard bound to a client: a request handler for any Node HTTP server. */
export interface Dashboard {
  readonly basePath: string;
  /** Handles a request under `basePath`; resolves false (nothing sent) for a path outside it. */
  handle(req: IncomingMessage, res: ServerResponse): Promise<boolean>;
  /** Whether authentication is configured (a non-loopback listener needs it). */
  readonly authenticated: boolean;
  /** The shared poll's work so far. */
  readonly stats: HubStats;
  /** Stops the shared poll and running bulk actions. */
  close(): Promise<void>;
}

const MAX_BODY = 64 * 1024;

/** Creates the dashboard of a client (use a client of its own with `statementTimeoutMs`, docs/dashboard.md). */
export function createDashboard(api: Nightshift, options: DashboardOptions = {}): Dashboard {
  checkAuth(options.auth);
  const base = (options.basePath ?? '').replace(/\/+$/, '');
  if (base && !/^\/[A-Za-z0-9._~\-/]*$/.test(base)) throw new OptionsInvalidError('dashboard options', [{ path: 'basePath', message: 'must be a path like /ops/jobs' }]);
  const anonymous = options.anonymousPermissions ?? [...PERMISSIONS];
  const secret = options.secret ? Buffer.from(options.secret) : randomBytes(32);
  const settings: DashboardSettings = { searchWindow: options.searchWindow ?? 100_000, countCap: options.countCap ?? 10_000 };
  const pages: DashboardPage[] = [...builtInPages(), ...(options.pages ?? [])];
  const log = options.logger;
  const hub = new LiveHub({ tickMs: 250, freshMs: 1_000, onError: (err) => log?.warn({ code: codeOf(err) }, 'dashboard live update failed') });
  const bulk = new BulkRunner(api, { window: settings.searchWindow, cap: settings.countCap });

  const find = (path: string) => {
    for (const page of pages) {
      const params = matchPath(page.path, path);
      if (params) return { page, params };
    }
    return undefined;
  };
  const href = (path: string, query?: Record<string, string | number | undefined | null>) => {
    const q = new URLSearchParams();
    for (const [k, v] of Object.entries(query ?? {})) if (v !== undefined && v !== null && v !== '') q.set(k, String(v));
    const s = q.toString();
    return `${base}${path === '/' && base ? '' : path}${s ? `?${s}` : ''}` || '/';
  };
  const viewFor = (user: DashboardUser, query: URLSearchParams, params: Record<string, string>): ViewContext => ({
    user,
    can: (p) => can(user, p),
    href,
    csrf: html`<input type="hidden" name="csrf" value="${csrfToken(secret, user.name)}" />`,
    csrfMeta: html`<meta name="csrf-token" content="${csrfToken(secret, user.name)}" />`,
    query,
    params,
  });
  const loadContext = (query: URLSearchParams, params: Record<string, string>): LoadContext => ({ api, params, query, bulk, settings });

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<boolean> {
    const url = new URL(req.url ?? '/', 'http://dashboard');
    if (base && url.pathname !== base && !url.pathname.startsWith(`${base}/`)) return false;
    const path = url.pathname.slice(base.length) || '/';
    const started = Date.now();
    let user: DashboardUser | undefined;
    const done = (status: number) => log?.info({ method: req.method, path: path.split('/').slice(0, 3).join('/'), status, user: user?.name, ms: Date.now() - started }, 'dashboard request');
    const send = (status: number, body: string, type: string, scriptNonce?: string) => {
      securityHeaders(res, scriptNonce);
      res.writeHead(status, { 'content-type': type });
      res.end(body);
      done(status);
    };
    try {
      // Without authentication only this machine may use it: by a loopback name, not a rebound one.
      const name = hostName(req.headers.host);
      if (options.auth === undefined && name !== undefined && !isLoopback(name)) {
        send(421, 'this dashboard has no authentication: it answers only as localhost, 127.0.0.1 or [::1]; configure auth to serve it under another name\n', 'text/plain; charset=utf-8');
        return true;
      }
      const auth = await authenticate(req, options.auth, anonymous);
      if ('challenge' in auth) {
        if (auth.challenge) res.setHeader('www-authenticate', auth.challenge);
        send(401, 'authentication required\n', 'text/plain; charset=utf-8');
        return true;
      }
      user = auth.user;
      if (!can(user, 'read')) {
        send(403, 'this user has no permission to read the dashboard\n', 'text/plain; charset=utf-8');
        return true;
      }
      if (req.method === 'GET' && path === '/assets/app.js') return (send(200, CLIENT_JS, 'text/javascript; charset=utf-8'), true);
      if (req.method === 'GET' && path === '/assets/app.css') return (send(200, CLIENT_CSS, 'text/css; charset=utf-8'), true);
      if (req.method === 'GET' && path === '/live') return (live(req, res, url, user), done(200), true);
      if (req.method === 'POST') {
        const form = await readForm(req);
        const problem = csrfProblem(req, secret, user.name, form?.get('csrf') ?? null);
        if (problem || !form) {
          send(403, `refused: ${problem ?? 'not a form post'}\n`, 'text/plain; charset=utf-8');
          return true;
        }
        const m = /^\/actions\/([a-z0-9-]+)\/([a-z0-9-]+)$/.exec(path);
        const page = m ? pages.find((p) => p.id === m[1]) : undefined;
        const action = m ? page?.actions?.[m[2]!] : undefined;
        if (!action) return (send(404, 'no such action\n', 'text/plain; charset=utf-8'), true);
        if (!can(user, action.permission)) return (send(403, `this user lacks the "${action.permission}" permission\n`, 'text/plain; charset=utf-8'), true);
        const back = safeBack(form.get('back'), base);
        let target: string;
        try {
          const result = await action.run({ ...loadContext(new URLSearchParams(), {}), user, form });
          target = withFlash(secret, safeBack(result.redirect ?? back, base), result.flash ?? null, false);
        } catch (err) {
          if (!isNightshiftError(err)) throw err;
          target = withFlash(secret, back, `${err.code}: ${err.message}`, true);
        }
        hub.changed();
        res.setHeader('location', target);
        send(303, '', 'text/plain; charset=utf-8');
        log?.info({ action: `${m![1]}/${m![2]}`, user: user.name }, 'dashboard action');
        return true;
      }
      if (req.method !== 'GET' && req.method !== 'HEAD') return (send(405, 'method not allowed\n', 'text/plain; charset=utf-8'), true);
      const found = find(path);
      if (!found) return (send(404, 'not found\n', 'text/plain; charset=utf-8'), true);
      const n = nonce();
      const view = viewFor(user, url.searchParams, found.params);
      const key = keyOf(path, url.searchParams);
      let content: Html;
      let status = 200;
      try {
        const data = await hub.read(key, () => found.page.load(loadContext(url.searchParams, found.params)));
        content = found.page.render(data, view);
      } catch (err) {
        if (!isNightshiftError(err)) throw err;
        status = err.code === 'NS_JOB_NOT_FOUND' || err.code === 'NS_SCHEDULE_NOT_FOUND' ? 404 : 400;
        content = html`<h1>${found.page.title}</h1>
          <div class="flash error">${err.code}: ${err.message}</div>`;
      }
      const liveOn = found.page.live !== false;
      const page = layout({
        title: found.page.title,
        nonce: n,
        base,
        pages,
        current: found.page.id,
        view,
        content,
        live: liveOn,
        liveUrl: `${base}/live?u=${encodeURIComponent(key)}`,
        flash: signedFlash(secret, url.searchParams),
        flashError: url.searchParams.get('flashError') === '1',
      });
      send(status, page.text, 'text/html; charset=utf-8', n);
      return true;
    } catch (err) {
      log?.warn({ code: codeOf(err), path: path.split('/').slice(0, 3).join('/') }, 'dashboard request failed');
      if (!res.headersSent) send(500, 'the dashboard failed to answer (see the server log for the error code)\n', 'text/plain; charset=utf-8');
      return true;
    }
  }

  function live(req: IncomingMessage, res: ServerResponse, url: URL, user: DashboardUser): void {
    const key = url.searchParams.get('u') ?? '/';
    const every = Math.min(60_000, Math.max(1_000, Number(url.searchParams.get('every')) || 5_000));
    const at = new URL(key, 'http://dashboard');
    const found = find(at.pathname);
    securityHeaders(res);
    if (!found || found.page.live === false) {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' });
      res.end('no live page there\n');
      return;
    }
    res.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8', connection: 'keep-alive' });
    res.write(': live\n\n');
    const view = viewFor(user, at.searchParams, found.params);
    const off = hub.subscribe(
      keyOf(at.pathname, at.searchParams),
      () => found.page.load(loadContext(at.searchParams, found.params)),
      every,
      (data) => {
        let body: string;
        try {
          body = found.page.render(data, view).text;
        } catch {
          return;
        }
        res.write(`event: update\ndata: ${JSON.stringify({ html: body })}\n\n`);
      },
    );
    req.on('close', off);
  }

  return {
    basePath: base,
    handle,
    authenticated: options.auth !== undefined,
    get stats() {
      return hub.stats;
    },
    async close() {
      hub.close();
      await bulk.close();
    },
  };
}

/** The cache key of a page: its path and its sorted query (without the flash). */
function keyOf(path: string, query: URLSearchParams): string {
  const q = new URLSearchParams([...query].filter(([k]) => k !== 'flash' && k !== 'flashError' && k !== 'fs').sort(([a], [b]) => a.localeCompare(b)));
  const s = q.toString();
  return s ? `${path}?${s}` : path;
}

/** The signature of a status message, so a crafted link cannot show its own text as the dashboard's. */
function flashSignature(secret: Buffer, flash: string, error: boolean): string {
  return createHmac('sha256', secret)
    .update(`flash\0${error ? 1 : 0}\0${flash}`)
    .digest('base64url')
    .slice(0, 22);
}

function withFlash(secret: Buffer, target: string, flash: string | null, error: boolean): string {
  if (!flash) return target;
  const u = new URL(target, 'http://dashboard');
  const text = flash.slice(0, 300);
  u.searchParams.set('flash', text);
  if (error) u.searchParams.set('flashError', '1');
  u.searchParams.set('fs', flashSignature(secret, text, error));
  return `${u.pathname}${u.search}`;
}

/** The status message of a redirect after an action, when this dashboard signed it; null otherwise. */
function signedFlash(secret: Buffer, q: URLSearchParams): string | null {
  const flash = q.get('flash');
  if (!flash) return null;
  const want = flashSignature(secret, flash, q.get('flashError') === '1');
  const got = q.get('fs') ?? '';
  return got.length === want.length && timingSafeEqual(Buffer.from(got), Buffer.from(want)) ? flash : null;
}

/** Where to go back to after an action: a path of this dashboard only (never another site). */
function safeBack(back: string | null, base: string): string {
  if (back && back.startsWith(`${base}/`) && !back.startsWith('//') && !back.includes('\\')) return back;
  return `${base}/`;
}

function codeOf(err: unknown): string {
  return isNightshiftError(err) ? err.code : err instanceof Error ? err.name : 'error';
}

async function readForm(req: IncomingMessage): Promise<URLSearchParams | null> {
  const type = String(req.headers['content-type'] ?? '')
    .split(';')[0]!
    .trim();
  if (type !== 'application/x-www-form-urlencoded') return null;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) return null;
    chunks.push(chunk as Buffer);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
}
