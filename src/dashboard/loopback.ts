import { isIP } from 'node:net';

/** Whether `host` (a bind address or a Host header's name, IPv6 in brackets or not) names this machine only. */
export function isLoopback(host: string): boolean {
  const h = host
    .replace(/^\[|\]$/g, '')
    .toLowerCase()
    .replace(/^::ffff:(?=\d+\.)/, '');
  if (h === 'localhost' || h === '::1') return true;
  return isIP(h) === 4 && h.startsWith('127.');
}

/**
 * The name a request's Host header gives, without its port ("[::1]:4000" → "[::1]"); undefined
 * without one. A dashboard without authentication answers only requests whose Host is a loopback
 * name, so a web page that rebinds its own name to 127.0.0.1 (DNS rebinding) cannot read or act.
 */
export function hostName(header: string | undefined): string | undefined {
  if (!header) return undefined;
  const m = /^(\[[^\]]*\]|[^:]*)(?::\d*)?$/.exec(header.trim());
  return m ? m[1] : header;
}
