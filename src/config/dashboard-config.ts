import type { IncomingMessage } from 'node:http';

/**
 * What a dashboard user may do. `read` sees every page but payloads; `act` retries, cancels and
 * runs jobs now, pauses and resumes queues, triggers and pauses schedules; `resolve` resolves held
 * jobs; `bulk` starts and stops bulk actions; `payloads` sees payloads, progress and job logs.
 */
export type DashboardPermission = 'read' | 'act' | 'resolve' | 'bulk' | 'payloads';

/** A user of basic or bearer authentication; `permissions` default to `['read']`. */
export interface DashboardCredential {
  name: string;
  permissions?: DashboardPermission[];
}

/** An authenticated user: the actor of the audit log, and what they may do. */
export interface DashboardUser {
  name: string;
  permissions: readonly DashboardPermission[];
}

/**
 * How the dashboard authenticates a request: HTTP basic users, bearer tokens, or the host app's
 * own function (its session, its SSO), which returns the user or null for "not signed in".
 */
export type DashboardAuth =
  | { basic: (DashboardCredential & { password: string })[] }
  | { bearer: (DashboardCredential & { token: string })[] }
  | { authenticate: (req: IncomingMessage) => DashboardUser | null | undefined | Promise<DashboardUser | null | undefined> };

/** The `dashboard` section of nightshift.config.ts: what `nightshift dashboard` serves with. */
export interface DashboardConfig {
  /** Required to listen beyond loopback (docs/dashboard.md). Keep passwords and tokens in the environment. */
  auth?: DashboardAuth;
  /** Permissions of everyone when there is no `auth` (loopback only). Default: all. */
  anonymousPermissions?: DashboardPermission[];
  /** Default 127.0.0.1 (`--host` wins). */
  host?: string;
  /** Default 4000 (`--port` wins). */
  port?: number;
  /** A path to serve under, e.g. `/ops/jobs`. Default none. */
  basePath?: string;
  /** Key of the CSRF tokens (keep it in the environment). Default: random per process. */
  secret?: string;
  /** The dashboard's queries are cut after this long. Default 5000 ms. */
  statementTimeoutMs?: number;
  /** The newest jobs a search looks at when finished jobs may match. Default 100,000. */
  searchWindow?: number;
  /** Counts stop here and show "more than N". Default 10,000. */
  countCap?: number;
}

/** The keys of {@link DashboardConfig}, for the config's did-you-mean. */
export const DASHBOARD_CONFIG_KEYS = ['auth', 'anonymousPermissions', 'host', 'port', 'basePath', 'secret', 'statementTimeoutMs', 'searchWindow', 'countCap'];
