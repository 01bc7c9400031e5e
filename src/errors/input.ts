/** Errors of input: definitions, options, payloads and names that are not right. */
import { formatIssues, NightshiftError, type Issue } from './base.js';
import { closest, knownHint } from './suggest.js';

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

/** Two job definitions share a kind. */
export class DuplicateKindError extends NightshiftError {
  constructor(kind: string) {
    super('NS_DUPLICATE_KIND', `job kind "${kind}" is defined twice`, {
      hint: 'each kind names exactly one defineJob; rename one of them',
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
    super('NS_MISSING_ENV', `missing required environment variable${missing.length > 1 ? 's' : ''}:\n${missing.map((m) => `  - ${m.name} (required by ${m.requiredBy.join(', ')})`).join('\n')}`, {
      hint: 'set them in the environment of this process, or run it without the roles that need them',
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

/** No schedule with that name is defined in this client. */
export class ScheduleNotFoundError extends NightshiftError {
  constructor(name: string, known: readonly string[]) {
    super('NS_SCHEDULE_NOT_FOUND', `no schedule named "${name}"`, {
      hint: knownHint(name, known, 'schedules', 'define it with defineSchedule and pass it to the client’s schedules', 'defined'),
    });
  }
}
