/**
 * The fault harness's proxy is the suite's one TCP proxy (test/support/tcp-proxy.ts), which knows
 * PostgreSQL connections by application_name. This name stays for code written against it.
 * @deprecated import `TcpProxy` from test/support/tcp-proxy.ts.
 */
export { startupApplicationName, TcpProxy as PgProxy } from '../../support/tcp-proxy.js';
