/**
 * `nightshift/dashboard`: the web dashboard as a request handler for your own server (plain Node
 * or a fastify plugin) or a standalone server. See docs/dashboard.md.
 */
export { createDashboard, type Dashboard, type DashboardOptions, type DashboardLogger } from './handler.js';
export { serveDashboard, checkBind, isLoopback, type DashboardServer } from './serve.js';
export { dashboardPlugin } from './fastify.js';
export type { DashboardAuth, DashboardCredential } from './auth.js';
export { PERMISSIONS, type Permission, type DashboardUser } from './permissions.js';
export { definePage, type DashboardPage, type DashboardAction, type LoadContext, type ViewContext, type ActionResult } from './page.js';
export { html, esc, type Html } from './html.js';
export type { HubStats } from './live-hub.js';
