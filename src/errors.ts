/**
 * The error catalogue. Every error nightshift throws is a {@link NightshiftError} with a stable
 * `code` (NS_…) that is never reused for another meaning; `docs/errors.md` lists them all with
 * what to do about each.
 */

/** One problem found while validating input: where it is, and what is wrong. */
export interface Issue {
  /** Dotted path of the offending field, `''` for the value as a whole. */
  path: string;
  /** What is wrong and, where possible, how to fix it. */
  message: string;
}

/** Base class of every nightshift error; `code` is stable, `hint` says how to fix it. */
export class NightshiftError extends Error {
  readonly code: string;
  readonly hint: string | undefined;
  readonly issues: readonly Issue[];

  constructor(code: string, message: string, options: { hint?: string; issues?: Issue[]; cause?: unknown } = {}) {
    super(options.hint ? `${message}\n  hint: ${options.hint}` : message, { cause: options.cause });
    this.name = new.target.name;
    this.code = code;
    this.hint = options.hint;
    this.issues = options.issues ?? [];
  }
}

/**
 * Whether `err` is a nightshift error, from this or another copy of the module (a config file
 * loaded through tsx gets its own copy, so `instanceof` is not enough).
 */
export function isNightshiftError(err: unknown): err is NightshiftError {
  return err instanceof NightshiftError || (err instanceof Error && typeof (err as unknown as { code?: unknown }).code === 'string' && String((err as unknown as { code: string }).code).startsWith('NS_'));
}

function formatIssues(issues: readonly Issue[]): string {
  return issues.map((i) => `  - ${i.path || '(value)'}: ${i.message}`).join('\n');
}

/** The configuration (of the client, a job, a schedule, a config file) is invalid. */
export class ConfigError extends NightshiftError {
  constructor(what: string, issues: Issue[]) {
    super('NS_CONFIG_INVALID', `invalid ${what}:\n${formatIssues(issues)}`, { issues });
  }
}

/** A payload does not match its kind's schema, or cannot be stored as JSON. */
export class PayloadInvalidError extends NightshiftError {
  constructor(kind: string, issues: Issue[]) {
    super('NS_PAYLOAD_INVALID', `invalid payload for kind "${kind}":\n${formatIssues(issues)}`, {
      issues,
      hint: 'fix the payload so it matches the schema given to defineJob; nothing was written',
    });
  }
}

/** A payload is larger than the configured limit (`maxPayloadBytes`, default 1 MiB). */
export class PayloadTooLargeError extends NightshiftError {
  constructor(kind: string, bytes: number, limit: number) {
    super('NS_PAYLOAD_TOO_LARGE', `payload for kind "${kind}" is ${bytes} bytes, over the limit of ${limit} bytes`, {
      hint: 'store large data elsewhere (a table, object storage) and pass its id in the payload, or raise maxPayloadBytes',
    });
  }
}

/** The kind is not defined in this client (enqueue) or not registered in the database (SQL). */
export class UnknownKindError extends NightshiftError {
  constructor(kind: string, known: readonly string[]) {
    super('NS_UNKNOWN_KIND', `unknown job kind "${kind}"`, {
      hint: knownHint(kind, known, 'kinds', 'define the job with defineJob and pass it to createNightshift({ jobs })'),
    });
  }
}

/** Enqueue or admin options are invalid (a negative delay, an out-of-range priority, …). */
export class OptionsInvalidError extends NightshiftError {
  constructor(what: string, issues: Issue[]) {
    super('NS_OPTIONS_INVALID', `invalid ${what}:\n${formatIssues(issues)}`, {
      issues,
      hint: 'fix the options named above; nothing was written',
    });
  }
}

/** The database schema is missing or older than this version of nightshift. */
export class NotMigratedError extends NightshiftError {
  constructor(schema: string, have: number, want: number) {
    super('NS_NOT_MIGRATED', `schema "${schema}" is at migration ${have}, this version needs ${want}`, {
      hint: 'run `nightshift migrate` (or call migrate()) before starting workers',
    });
  }
}

/** The database schema is newer than this version of nightshift understands. */
export class SchemaTooNewError extends NightshiftError {
  constructor(schema: string, have: number, want: number) {
    super('NS_SCHEMA_TOO_NEW', `schema "${schema}" is at migration ${have}, newer than this version's ${want}`, {
      hint: 'upgrade nightshift in this process; an older version must not write to a newer schema',
    });
  }
}

/** No job with that id. */
export class JobNotFoundError extends NightshiftError {
  constructor(id: string) {
    super('NS_JOB_NOT_FOUND', `no job with id ${id}`, { hint: 'check the id with `nightshift jobs list`' });
  }
}

/** An admin action does not apply to the job's current state (retrying a running job, …). */
export class InvalidTransitionError extends NightshiftError {
  constructor(id: string, action: string, state: string, allowed: readonly string[]) {
    super('NS_INVALID_TRANSITION', `cannot ${action} job ${id}: it is ${state}`, {
      hint: `${action} applies to jobs that are ${allowed.join(', ')}`,
    });
  }
}

/** The database could not be reached or refused the operation for a reason outside nightshift. */
export class DatabaseError extends NightshiftError {
  readonly sqlState: string | undefined;
  constructor(message: string, sqlState: string | undefined, cause: unknown, hint?: string) {
    super('NS_DATABASE', message, { cause, ...(hint ? { hint } : {}) });
    this.sqlState = sqlState;
  }
}

/** The client was stopped; it takes no more work. */
export class StoppedError extends NightshiftError {
  constructor(what: string) {
    super('NS_STOPPED', `${what}: the nightshift client is stopped`, {
      hint: 'create a new client, or do the work before calling stop()',
    });
  }
}

/** A job ran past its `timeoutMs`; stored in the job's error history. */
export class JobTimeoutError extends NightshiftError {
  constructor(timeoutMs: number) {
    super('NS_JOB_TIMEOUT', `job ran past its timeout of ${timeoutMs} ms and was aborted`);
  }
}

/** The worker lost a job's lease (rescued, cancelled or taken by a newer claim). */
export class LeaseLostError extends NightshiftError {
  constructor(id: string, why: string) {
    super('NS_LEASE_LOST', `lease on job ${id} lost: ${why}`);
  }
}

/** Two job definitions share a kind. */
export class DuplicateKindError extends NightshiftError {
  constructor(kind: string) {
    super('NS_DUPLICATE_KIND', `job kind "${kind}" is defined twice`, {
      hint: 'each kind names exactly one defineJob; rename one of them',
    });
  }
}

/** Levenshtein distance, for did-you-mean suggestions. */
export function editDistance(a: string, b: string): number {
  const prev = Array.from({ length: b.length + 1 }, (_, i) => i);
  for (let i = 1; i <= a.length; i++) {
    let diag = prev[0]!;
    prev[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const up = prev[j]!;
      prev[j] = Math.min(up + 1, prev[j - 1]! + 1, diag + (a[i - 1] === b[j - 1] ? 0 : 1));
      diag = up;
    }
  }
  return prev[b.length]!;
}

/** The candidate closest to `word`, when it is close enough to be a likely typo (or one extends the other). */
export function closest(word: string, candidates: readonly string[]): string | undefined {
  const lower = word.toLowerCase();
  const extended = candidates.find((c) => lower.length >= 3 && (c.toLowerCase().startsWith(lower) || lower.startsWith(c.toLowerCase())));
  if (extended) return extended;
  let best: string | undefined;
  let bestDistance = Infinity;
  for (const c of candidates) {
    const d = editDistance(word.toLowerCase(), c.toLowerCase());
    if (d < bestDistance) {
      best = c;
      bestDistance = d;
    }
  }
  return best !== undefined && bestDistance <= Math.max(2, Math.floor(word.length / 3)) ? best : undefined;
}

/**
 * The hint for a name that is not among `known`: a did-you-mean with the list, the list alone, or
 * — when nothing is known — how to define one.
 */
function knownHint(name: string, known: readonly string[], plural: string, howToDefine: string, adjective = 'known'): string {
  const list = `${plural}: ${known.join(', ')}`;
  const suggestion = closest(name, known);
  if (suggestion) return `did you mean "${suggestion}"? ${adjective[0]!.toUpperCase()}${adjective.slice(1)} ${list}`;
  return known.length ? `${adjective} ${list}` : howToDefine;
}

/** An issue for an unknown option key, with a did-you-mean when one is close. */
export function unknownKey(key: string, known: readonly string[]): Issue {
  const best = closest(key.split('.').at(-1) ?? key, known.map((k) => k.split('.').at(-1) ?? k));
  return {
    path: key,
    message: best ? `unknown option; did you mean "${best}"?` : `unknown option; known options: ${known.join(', ')}`,
  };
}

/** The job was cancelled while it ran; its abort signal carries this reason. */
export class JobCancelledError extends NightshiftError {
  constructor(id: string) {
    super('NS_JOB_CANCELLED', `job ${id} was cancelled while it ran`);
  }
}

/** The worker is shutting down and its grace period is over; its abort signal carries this reason. */
export class ShutdownError extends NightshiftError {
  constructor(graceMs: number) {
    super('NS_SHUTDOWN', `worker shutting down: the job did not finish within the ${graceMs} ms grace period`);
  }
}

/** A process was asked to run a role the configuration does not define. */
export class UnknownRoleError extends NightshiftError {
  constructor(roles: readonly string[], valid: readonly string[]) {
    const suggestions = roles.map((r) => closest(r, valid)).filter((s): s is string => s !== undefined);
    super('NS_UNKNOWN_ROLE', `unknown role${roles.length > 1 ? 's' : ''}: ${roles.map((r) => `"${r}"`).join(', ')}`, {
      hint: `valid roles: ${valid.length ? valid.join(', ') : '(none defined)'}${suggestions.length ? `; did you mean ${suggestions.map((s) => `"${s}"`).join(', ')}?` : ''}`,
    });
  }
}

/** Required environment variables are missing: start-up fails closed. */
export class MissingEnvError extends NightshiftError {
  constructor(missing: readonly { name: string; requiredBy: string[] }[]) {
    super(
      'NS_MISSING_ENV',
      `missing required environment variable${missing.length > 1 ? 's' : ''}:\n${missing.map((m) => `  - ${m.name} (required by ${m.requiredBy.join(', ')})`).join('\n')}`,
      { hint: 'set them in the environment of this process, or run it without the roles that need them' },
    );
  }
}

/** The connections the fleet would need exceed what the server allows. */
export class BudgetExceededError extends NightshiftError {
  constructor(message: string) {
    super('NS_BUDGET_EXCEEDED', message, {
      hint: 'lower maxConnections per process or the number of replicas, raise max_connections on the server, or put a pooler in front',
    });
  }
}

/**
 * A write fenced by a leader's token was refused: the token is not the current, unexpired term of
 * the lease (the lease expired or passed to another holder). Raised by `assert_lease` in SQL
 * (SQLSTATE NS005) and by `ctx.fence(tx)`; the transaction it was raised in must roll back.
 */
export class FencedError extends NightshiftError {
  /** The lease name, when known. */
  readonly lease: string | undefined;
  /** The refused fencing token, when known. */
  readonly token: string | undefined;
  constructor(detail: string, lease?: string, token?: string) {
    super('NS_FENCED', `write refused by fencing: ${detail}`, {
      hint: 'this process is no longer the leader of that lease; stop the work and let the current leader do it',
    });
    this.lease = lease;
    this.token = token;
  }
}

/** A leader's term ended: the reason its signal carries (lease lost, not renewed in time, or released on stop). */
export class LeadershipLostError extends NightshiftError {
  /** Why the term ended: `lost` (taken over or found expired), `expired` (not renewed in time), `released` (stop). */
  readonly why: 'lost' | 'expired' | 'released';
  constructor(lease: string, token: string, why: 'lost' | 'expired' | 'released') {
    const text = {
      lost: 'the lease was found expired or held by another process',
      expired: 'it could not be renewed before it would expire, so this process stepped down',
      released: 'it was released because this process is stopping',
    }[why];
    super('NS_LEADERSHIP_LOST', `leadership of "${lease}" (token ${token}) ended: ${text}`);
    this.why = why;
  }
}

/** No schedule with that name is defined in this client. */
export class ScheduleNotFoundError extends NightshiftError {
  constructor(name: string, known: readonly string[]) {
    super('NS_SCHEDULE_NOT_FOUND', `no schedule named "${name}"`, {
      hint: knownHint(name, known, 'schedules', 'define it with defineSchedule and pass it to the client’s schedules', 'defined'),
    });
  }
}

/** Two schedule definitions share a name. */
export class DuplicateScheduleError extends NightshiftError {
  constructor(name: string) {
    super('NS_DUPLICATE_SCHEDULE', `schedule "${name}" is defined twice`, {
      hint: 'each schedule name names exactly one defineSchedule; rename one of them',
    });
  }
}

/** Redis could not be reached, or the connection dropped while a command was in flight. */
export class RedisUnavailableError extends NightshiftError {
  constructor(what: string, cause: unknown, hint?: string) {
    super('NS_REDIS_UNAVAILABLE', `${what}: Redis is unavailable (${cause instanceof Error ? cause.message : String(cause)})`, {
      cause,
      hint: hint ?? 'check redisUrl and that redis-server is running; the operation may be retried once it is back',
    });
  }
}

/** The Redis server is older than the oldest version the streams need (6.2). */
export class RedisVersionError extends NightshiftError {
  constructor(what: string, version: string, minimum: string) {
    super('NS_REDIS_VERSION', `${what}: Redis ${version} is too old; nightshift's streams need Redis ${minimum} or newer (XAUTOCLAIM, XGROUP CREATECONSUMER)`, {
      hint: `upgrade the server to Redis ${minimum}+ (7.x recommended); nothing was read or written`,
    });
  }
}

/** A stream named by a string is not among the streams this client was given. */
export class UnknownStreamError extends NightshiftError {
  constructor(name: string, known: readonly string[]) {
    super('NS_UNKNOWN_STREAM', `unknown stream "${name}"`, {
      hint: knownHint(name, known, 'streams', "pass the definition from defineStream, or list it in the client's streams"),
    });
  }
}

/** A status is not part of a status order made with defineStatusOrder. */
export class UnknownStatusError extends NightshiftError {
  constructor(status: string, known: readonly string[]) {
    super('NS_UNKNOWN_STATUS', `unknown status "${status}"`, {
      hint: knownHint(status, known, 'statuses', 'list the statuses in defineStatusOrder'),
    });
  }
}

/** A stream consumer stopped handling an entry: the process is shutting down or lost the singleton's leadership. */
export class ConsumerStoppedError extends NightshiftError {
  constructor(consumer: string, why: string) {
    super('NS_CONSUMER_STOPPED', `stream consumer "${consumer}" stopped: ${why}`);
  }
}

/** A stream handler ran past its consumer's `timeoutMs`. */
export class StreamHandlerTimeoutError extends NightshiftError {
  constructor(consumer: string, timeoutMs: number) {
    super('NS_STREAM_HANDLER_TIMEOUT', `stream consumer "${consumer}": the handler ran past its timeout of ${timeoutMs} ms and was aborted`);
  }
}

/** Redis refused a command (a wrong key type, a missing group, a script error, …). */
export class RedisCommandError extends NightshiftError {
  constructor(what: string, cause: unknown) {
    super('NS_REDIS_COMMAND', `${what}: Redis refused the command (${cause instanceof Error ? cause.message : String(cause)})`, {
      cause,
      hint: 'a WRONGTYPE reply means the key holds something other than a stream; check the stream name',
    });
  }
}
