import type { Nightshift } from '../index.js';
import type { BulkRunner } from './bulk.js';
import type { Html } from './html.js';
import type { DashboardUser, Permission } from './permissions.js';

/** What a page's `load` gets: the client (the admin API) and the request's path parameters and query. */
export interface LoadContext {
  api: Nightshift;
  params: Record<string, string>;
  query: URLSearchParams;
  bulk: BulkRunner;
  settings: DashboardSettings;
}

/** The dashboard's settings that pages read. */
export interface DashboardSettings {
  /** The newest jobs a search looks at when finished jobs may match. */
  searchWindow: number;
  /** Counts stop here and show "more than N". */
  countCap: number;
}

/** What a page's `render` gets: who is looking, and how to make links and forms. */
export interface ViewContext {
  user: DashboardUser;
  can(permission: Permission): boolean;
  /** A link inside the dashboard: `href('/jobs', { state: 'held' })`. */
  href(path: string, query?: Record<string, string | number | undefined | null>): string;
  /** The hidden CSRF field of a POST form. */
  csrf: Html;
  /** The same token as a meta tag of the page head. */
  csrfMeta: Html;
  query: URLSearchParams;
  params: Record<string, string>;
}

/** The result of an action: where to go next, and what to tell the user there. */
export interface ActionResult {
  /** A path of this dashboard (with its base path); default: the form's `back`. */
  redirect?: string;
  flash?: string;
}

/** A state-changing action (always a POST with a CSRF token), with the permission it needs. */
export interface DashboardAction {
  permission: Permission;
  run(ctx: LoadContext & { user: DashboardUser; form: URLSearchParams }): Promise<ActionResult>;
}

/**
 * A page of the dashboard: a path (`/jobs/:id`), what it loads through the admin API, how it
 * renders, and the actions it offers. The page set is a registry: pipelines, alerts and limits
 * add their pages by adding entries (see `pages/index.ts`).
 */
export interface DashboardPage<D = unknown> {
  id: string;
  title: string;
  path: string;
  /** Shown in the navigation (default true; detail pages say false). */
  nav?: boolean;
  /** Updated in place while open (default true); a page with selections says false. */
  live?: boolean;
  load(ctx: LoadContext): Promise<D>;
  render(data: D, view: ViewContext): Html;
  actions?: Record<string, DashboardAction>;
}

/** Defines a page (typed: `render` gets what `load` returns). */
export function definePage<D>(page: DashboardPage<D>): DashboardPage<unknown> {
  return page as DashboardPage<unknown>;
}

/** Matches a path against a page's pattern; the parameters, or null. */
export function matchPath(pattern: string, path: string): Record<string, string> | null {
  const a = pattern.split('/');
  const b = path.split('/');
  if (a.length !== b.length) return null;
  const params: Record<string, string> = {};
  for (let i = 0; i < a.length; i++) {
    if (a[i]!.startsWith(':')) {
      if (!b[i]) return null;
      params[a[i]!.slice(1)] = decodeURIComponent(b[i]!);
    } else if (a[i] !== b[i]) return null;
  }
  return params;
}
