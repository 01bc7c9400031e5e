import type { DashboardPermission, DashboardUser } from '../index.js';

export type { DashboardUser } from '../index.js';

/** What a dashboard user may do (see {@link DashboardPermission}). */
export type Permission = DashboardPermission;

/** Every permission. */
export const PERMISSIONS: readonly Permission[] = ['read', 'act', 'resolve', 'bulk', 'payloads'];

/** Whether the user has the permission (every permission implies read). */
export function can(user: DashboardUser, permission: Permission): boolean {
  return permission === 'read' ? user.permissions.length > 0 : user.permissions.includes(permission);
}
