import { UnknownRoleError } from '../errors.js';

/** What one role hosts. Names refer to job kinds, schedules, daemons and stream consumers of the config. */
export interface RoleDefinition {
  /** Job kinds this role runs (claims). */
  jobs?: string[];
  /** Queues this role claims from (for every kind the config defines). */
  queues?: string[];
  schedules?: string[];
  daemons?: string[];
  consumers?: string[];
  /** Checks (defineCheck, and built-ins by name; `'nightshift.*'` is every built-in) whose ticks, runs and notifications this role hosts. */
  checks?: string[];
  /** Environment variables a process with this role must have. */
  requiredEnv?: string[];
}

/** What hosting a check takes: its schedule, the kinds that run it and deliver its notifications, and their queue. */
export interface CheckHosting {
  name: string;
  builtin: boolean;
  schedule: string;
  kinds: readonly string[];
  queue: string;
}

/** The names a configuration defines, for planning and validation. */
export interface Catalogue {
  jobs: { kind: string; queue: string; requiredEnv: readonly string[] }[];
  schedules: string[];
  daemons: { name: string; requiredEnv: readonly string[] }[];
  consumers: string[];
  requiredEnv: readonly string[];
  /** The checks of the config and the built-ins that are on (empty with the watchdog off). */
  checks?: readonly CheckHosting[];
}

/** What a process hosts for the roles it was given. */
export interface RolePlan {
  /** The roles, or `['*']` when none were given (then it runs everything). */
  roles: string[];
  kinds: string[];
  /** Queue → concurrency limit (Infinity: only the process limit applies). */
  queues: Map<string, number>;
  schedules: string[];
  daemons: string[];
  consumers: string[];
  /** Checks it hosts (their schedules and kinds are in `schedules` and `kinds`). */
  checks: string[];
  /** Every required environment variable, with who requires it. */
  requiredEnv: { name: string; requiredBy: string[] }[];
}

/**
 * Decides what a process hosts. With no roles it hosts everything; an unknown role is an error
 * listing the valid ones (seed 002's classic mistake). A role naming only queues runs every kind
 * of the config from those queues; a role naming jobs runs those kinds from their queues (plus any
 * queues it names). A role with neither (an API role) claims nothing.
 */
export function planRoles(catalogue: Catalogue, roles: Record<string, RoleDefinition>, active: readonly string[] | undefined): RolePlan {
  const env = new Map<string, Set<string>>();
  const need = (names: readonly string[] | undefined, by: string) => {
    for (const n of names ?? []) {
      if (!env.has(n)) env.set(n, new Set());
      env.get(n)!.add(by);
    }
  };
  need(catalogue.requiredEnv, 'the config');
  const requested = active?.filter((r) => r.length > 0) ?? [];
  if (requested.length === 0) {
    for (const j of catalogue.jobs) need(j.requiredEnv, `job ${j.kind}`);
    for (const d of catalogue.daemons) need(d.requiredEnv, `daemon ${d.name}`);
    return {
      roles: ['*'],
      kinds: catalogue.jobs.map((j) => j.kind),
      queues: new Map(catalogue.jobs.map((j) => [j.queue, Infinity])),
      schedules: [...catalogue.schedules],
      daemons: catalogue.daemons.map((d) => d.name),
      consumers: [...catalogue.consumers],
      checks: (catalogue.checks ?? []).map((c) => c.name),
      requiredEnv: [...env].map(([name, by]) => ({ name, requiredBy: [...by] })),
    };
  }
  const unknown = requested.filter((r) => !Object.hasOwn(roles, r));
  if (unknown.length) throw new UnknownRoleError(unknown, Object.keys(roles));
  const kinds = new Set<string>();
  const queues = new Map<string, number>();
  const schedules = new Set<string>();
  const daemons = new Set<string>();
  const consumers = new Set<string>();
  const checks = new Set<string>();
  const byKind = new Map(catalogue.jobs.map((j) => [j.kind, j]));
  const byDaemon = new Map(catalogue.daemons.map((d) => [d.name, d]));
  for (const name of requested) {
    const role = roles[name]!;
    need(role.requiredEnv, `role ${name}`);
    for (const kind of role.jobs ?? []) {
      kinds.add(kind);
      const job = byKind.get(kind);
      if (job) queues.set(job.queue, Infinity);
    }
    if (role.queues?.length) {
      for (const q of role.queues) queues.set(q, Infinity);
      if (!role.jobs?.length) for (const j of catalogue.jobs) kinds.add(j.kind);
    }
    for (const s of role.schedules ?? []) schedules.add(s);
    for (const d of role.daemons ?? []) daemons.add(d);
    for (const c of role.consumers ?? []) consumers.add(c);
    for (const name of role.checks ?? []) {
      // 'nightshift.*' is every built-in; a name that is not on (a built-in turned off) is skipped.
      for (const c of (catalogue.checks ?? []).filter((h) => (name === 'nightshift.*' ? h.builtin : h.name === name))) {
        checks.add(c.name);
        schedules.add(c.schedule);
        for (const k of c.kinds) kinds.add(k);
        queues.set(c.queue, Infinity);
      }
    }
  }
  for (const k of kinds) need(byKind.get(k)?.requiredEnv, `job ${k}`);
  for (const d of daemons) need(byDaemon.get(d)?.requiredEnv, `daemon ${d}`);
  return {
    roles: requested,
    kinds: [...kinds],
    queues,
    schedules: [...schedules],
    daemons: [...daemons],
    consumers: [...consumers],
    checks: [...checks],
    requiredEnv: [...env].map(([n, by]) => ({ name: n, requiredBy: [...by] })),
  };
}

/** The required variables missing from `env`: unset, empty or blanks only (a secret is never blank). */
export function missingEnv(plan: RolePlan, env: NodeJS.ProcessEnv): { name: string; requiredBy: string[] }[] {
  return plan.requiredEnv.filter((r) => (env[r.name] ?? '').trim() === '');
}

/** Parses `--roles a,b` or `NIGHTSHIFT_ROLES`. */
export function parseRoles(value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined;
  const roles = value
    .split(',')
    .map((r) => r.trim())
    .filter((r) => r.length > 0);
  return roles.length ? roles : undefined;
}
