import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { OptionsInvalidError, type DashboardAuth, type Issue } from '../index.js';
import { PERMISSIONS, type DashboardUser, type Permission } from './permissions.js';

export type { DashboardAuth, DashboardCredential } from '../index.js';

/** What authentication decided: a user, or the response that asks for credentials. */
export type AuthResult = { user: DashboardUser } | { challenge: string | null };

// Compared as SHA-256 digests: equal length whatever was sent, so timingSafeEqual never throws
// and the comparison takes the same time for a wrong password of any length.
function same(a: string, b: string): boolean {
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());
}

function checkPermissions(list: unknown, path: string, issues: Issue[]): void {
  if (list === undefined) return;
  if (!Array.isArray(list) || list.some((p) => !PERMISSIONS.includes(p as Permission))) {
    issues.push({ path, message: `must be a list of ${PERMISSIONS.join(', ')}` });
  }
}

/** Checks an auth option, naming every problem at once. */
export function checkAuth(auth: DashboardAuth | undefined): void {
  if (auth === undefined) return;
  const issues: Issue[] = [];
  if ('basic' in auth) {
    if (!Array.isArray(auth.basic) || auth.basic.length === 0) issues.push({ path: 'auth.basic', message: 'must list at least one user' });
    else
      auth.basic.forEach((u, i) => {
        if (typeof u.name !== 'string' || !u.name || u.name.includes(':')) issues.push({ path: `auth.basic[${i}].name`, message: 'must be a non-empty name without ":"' });
        if (typeof u.password !== 'string' || u.password.length < 8) issues.push({ path: `auth.basic[${i}].password`, message: 'must be at least 8 characters' });
        checkPermissions(u.permissions, `auth.basic[${i}].permissions`, issues);
      });
  } else if ('bearer' in auth) {
    if (!Array.isArray(auth.bearer) || auth.bearer.length === 0) issues.push({ path: 'auth.bearer', message: 'must list at least one token' });
    else
      auth.bearer.forEach((u, i) => {
        if (typeof u.name !== 'string' || !u.name) issues.push({ path: `auth.bearer[${i}].name`, message: 'must be a non-empty name' });
        if (typeof u.token !== 'string' || u.token.length < 16) issues.push({ path: `auth.bearer[${i}].token`, message: 'must be at least 16 characters' });
        checkPermissions(u.permissions, `auth.bearer[${i}].permissions`, issues);
      });
  } else if (typeof (auth as { authenticate?: unknown }).authenticate !== 'function') {
    issues.push({ path: 'auth', message: 'must be { basic: [...] }, { bearer: [...] } or { authenticate(req) }' });
  }
  if (issues.length) throw new OptionsInvalidError('dashboard options', issues);
}

/** Authenticates a request; without `auth` (loopback only) everyone is `local` with `anonymous` permissions. */
export async function authenticate(req: IncomingMessage, auth: DashboardAuth | undefined, anonymous: readonly Permission[]): Promise<AuthResult> {
  if (!auth) return { user: { name: 'local', permissions: anonymous } };
  const header = req.headers.authorization ?? '';
  if ('basic' in auth) {
    const m = /^Basic ([A-Za-z0-9+/=]+)$/i.exec(header);
    if (m) {
      const text = Buffer.from(m[1]!, 'base64').toString('utf8');
      const at = text.indexOf(':');
      const name = text.slice(0, at);
      const password = text.slice(at + 1);
      // Every user is compared, so the time taken does not say which names exist.
      let found: DashboardUser | undefined;
      for (const u of auth.basic) if (same(u.name, name) && same(u.password, password) && at > 0) found = { name: u.name, permissions: u.permissions ?? ['read'] };
      if (found) return { user: found };
    }
    return { challenge: 'Basic realm="nightshift", charset="UTF-8"' };
  }
  if ('bearer' in auth) {
    const m = /^Bearer (\S+)$/i.exec(header);
    if (m) {
      let found: DashboardUser | undefined;
      for (const u of auth.bearer) if (same(u.token, m[1]!)) found = { name: u.name, permissions: u.permissions ?? ['read'] };
      if (found) return { user: found };
    }
    return { challenge: 'Bearer realm="nightshift"' };
  }
  const user = await auth.authenticate(req);
  if (!user || typeof user.name !== 'string' || !Array.isArray(user.permissions)) return { challenge: null };
  return { user: { name: user.name, permissions: user.permissions.filter((p) => PERMISSIONS.includes(p)) } };
}
