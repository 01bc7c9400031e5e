import {
  DatabaseError,
  FencedError,
  NightshiftError,
  OptionsInvalidError,
  PayloadInvalidError,
  PayloadTooLargeError,
  UnknownKindError,
} from '../errors.js';

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

const CONNECTION_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'ENOTFOUND', 'ETIMEDOUT', 'EPIPE', '57P01', '57P02', '57P03', '08000', '08003', '08006', '08001', '08004']);

/** Turns an error from the pg driver into a nightshift error (ours pass through unchanged). */
export function translateDbError(err: unknown): Error {
  if (err instanceof NightshiftError) return err;
  const e = (err ?? {}) as PgErrorLike;
  const ours = fromOurSqlState(e);
  if (ours) return ours;
  if (e.code === '3F000' || (e.code === '42P01' && /relation ".*" does not exist/.test(e.message ?? ''))) {
    return new DatabaseError(e.message ?? 'schema missing', e.code, err, 'run `nightshift migrate` (or migrate()) first');
  }
  if (e.code && CONNECTION_CODES.has(e.code)) {
    return new DatabaseError(`database unavailable: ${e.message ?? e.code}`, e.code, err, 'check that PostgreSQL is running and DATABASE_URL is right');
  }
  if (err instanceof Error && /Connection terminated|connection timeout|Client has encountered a connection error/i.test(err.message)) {
    return new DatabaseError(`database unavailable: ${err.message}`, undefined, err, 'check that PostgreSQL is running and reachable');
  }
  const message = err instanceof Error ? err.message : String(err);
  return new DatabaseError(`database error: ${message}`, e.code, err);
}
