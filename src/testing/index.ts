/**
 * Helpers for users' tests (`nightshift/testing`): what nightshift left running, and an embedded
 * PostgreSQL for tests that need no installed server.
 */
export { liveResources } from '../lifecycle/resources.js';
export { startEmbeddedPostgres, type EmbeddedPostgresHandle } from '../dev/embedded-postgres.js';
