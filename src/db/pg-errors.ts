import pg from 'pg';
import { DatabaseError, FencedError, NightshiftError, OptionsInvalidError, PayloadInvalidError, PayloadTooLargeError, UnknownKindError } from '../errors.js';

interface PgErrorLike {
  code?: string;
  message?: string;
  hint?: string;
}

/** What our own SQL functions raise (see 0001_jobs.sql): SQLSTATE to the matching error. */
function fromOurSqlState(err: PgErrorLike): NightshiftError | undefined {
  const message = (err.message ?? '').replace(/^NS_[A-Z_]+: /, '');
  switch (err.code) {
    case 'NS001':
      return new UnknownKindError(/"([^"]*)"/.exec(message)?.[1] ?? '', []);
    case 'NS002':
      return new PayloadInvalidError(/"([^"]*)"/.exec(message)?.[1] ?? '', [{ path: 'payload', message }]);
    case 'NS003': {
      const m = /kind "([^"]*)" is (\d+) bytes, over the limit of (\d+)/.exec(message);
      return new PayloadTooLargeError(m?.[1] ?? '', Number(m?.[2] ?? 0), Number(m?.[3] ?? 0));
    }
    case 'NS004':
      return new OptionsInvalidError('enqueue options', [{ path: '', message }]);
    case 'NS005': {
      // From assert_lease (0002_leadership.sql): 'lease "<name>" token <n> refused: <why>'.
      const m = /^lease "([^"]*)" token (\S+) refused: /.exec(message);
      return new FencedError(message, m?.[1], m?.[2]);
    }
    default:
      return undefined;
  }
}

/**
 * The SQLSTATE when `err` says that our named statement `name` is not the one the server connection
 * has: 42P05 (`prepared statement "…" already exists`: another client prepared it on this server
 * connection) or 26000 (`… does not exist`: it was prepared on another one). Behind a
 * transaction-mode pooler both mean the server connection changed under the client.
 */
export function preparedStatementCollision(err: unknown, name: string): '42P05' | '26000' | undefined {
  const e = (err ?? {}) as PgErrorLike;
  if (e.code !== '42P05' && e.code !== '26000') return undefined;
  return (e.message ?? '').includes(`"${name}"`) ? e.code : undefined;
}

/**
 * SQLSTATEs of a connection that failed or that the server ended: the connection exceptions of
 * class 08 — not 08P01, a protocol violation such as a wrong number of parameters, which is a bug
 * — and the server shutting down, crashing or starting up (57P01–57P03).
 */
const UNAVAILABLE_SQLSTATES = new Set(['08000', '08001', '08003', '08004', '08006', '08007', '57P01', '57P02', '57P03']);

/** System error codes of a network that failed under the connection (Node's `err.code`, with `syscall`/`errno`). */
const NETWORK_ERRNOS = new Set(['ECONNREFUSED', 'ECONNRESET', 'ECONNABORTED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EPIPE', 'EHOSTUNREACH', 'ENETUNREACH', 'ENETDOWN', 'EHOSTDOWN']);

const SQLSTATE = /^[0-9A-Z]{5}$/;

/** Whether a driver error says the database is unavailable, by its class and code (never its message). */
function isUnavailable(err: unknown): boolean {
  const e = (err ?? {}) as { code?: unknown; errno?: unknown; syscall?: unknown; errors?: unknown };
  // A system error of the socket (connect, read, write, DNS): Node sets errno or syscall.
  if (typeof e.code === 'string' && (typeof e.errno === 'number' || typeof e.syscall === 'string')) return NETWORK_ERRNOS.has(e.code);
  // Connecting to a name with several addresses fails with one error per address.
  if (err instanceof AggregateError && Array.isArray(e.errors) && e.errors.length > 0) return e.errors.every(isUnavailable);
  // An error the server sent: a SQLSTATE.
  if (err instanceof pg.DatabaseError || (typeof e.code === 'string' && SQLSTATE.test(e.code))) return UNAVAILABLE_SQLSTATES.has(String(e.code));
  // The driver's own failures of the connection (terminated, timed out, not queryable) are plain
  // Errors without a code; a TypeError or RangeError is a bug, not an outage.
  return err instanceof Error && Object.getPrototypeOf(err) === Error.prototype && e.code === undefined;
}

/** Turns an error from the pg driver into a nightshift error (ours pass through unchanged). */
export function translateDbError(err: unknown): Error {
  if (err instanceof NightshiftError) return err;
  const e = (err ?? {}) as PgErrorLike;
  const ours = fromOurSqlState(e);
  if (ours) return ours;
  if (e.code === '3F000' || (e.code === '42P01' && /relation ".*" does not exist/.test(e.message ?? ''))) {
    return new DatabaseError(e.message ?? 'schema missing', e.code, err, 'run `nightshift migrate` (or migrate()) first');
  }
  const message = err instanceof Error ? err.message : String(err);
  if (isUnavailable(err)) {
    const hint = e.code ? 'check that PostgreSQL is running and DATABASE_URL is right' : 'check that PostgreSQL is running and reachable';
    return new DatabaseError(`database unavailable: ${message || e.code}`, e.code, err, hint, true);
  }
  return new DatabaseError(`database error: ${message}`, e.code, err);
}
