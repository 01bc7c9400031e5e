import type { Command } from 'commander';
import type { Nightshift } from '../index.js';
import type { CliRun } from './cli-io.js';
import { cliContext, withClient, type CliContext, type GlobalOptions } from './context.js';
import { table, type Cell } from './output.js';

/** What a command's work gets: its flags, its arguments, the run and the loaded config. */
export interface CommandInput<F, A extends unknown[]> {
  flags: F;
  args: A;
  ctx: CliContext;
}

/** A command that does its work with a short-lived client and prints the result. */
export interface ClientCommandSpec<F, A extends unknown[], D> {
  /** Takes `--json` (default true): then the result is printed as JSON instead of {@link human}. */
  json?: boolean;
  /** Checks of flags and arguments before the config loads, so a usage error comes first. */
  check?(flags: F, args: A): void;
  /** The work. `ns` is a short-lived admin client, stopped afterwards; none with `client: false`. */
  fetch(ns: Nightshift, input: CommandInput<F, A>): Promise<D>;
  /** No admin client: `fetch` makes its own (`budget` needs a worker's). */
  client?: false;
  /** The JSON printed with `--json`. Default: the result itself. */
  toJson?(data: D): unknown;
  /** Human output, one string per line. */
  human(data: D, input: CommandInput<F, A>): string[];
  /** The exit code for the result, whatever the output (default 0). */
  exitCode?(data: D): number;
}

/**
 * Adds the action of a command that loads the config, does one piece of work with a client and
 * prints its result — as JSON with `--json`, else as lines. The boilerplate every command shared.
 */
export function clientCommand<F extends object, A extends unknown[], D>(command: Command, run: CliRun, spec: ClientCommandSpec<F, A, D>): Command {
  if (spec.json !== false) command.option('--json', 'print JSON');
  return command.action(async (...params: unknown[]) => {
    // commander passes the declared arguments, then the options, then the command.
    const cmd = params[params.length - 1] as Command;
    const flags = cmd.opts<F & { json?: boolean }>();
    const args = params.slice(0, -2) as A;
    spec.check?.(flags, args);
    const ctx = await cliContext(run, cmd.optsWithGlobals<GlobalOptions>());
    const input = { flags, args, ctx };
    const data = spec.client === false ? await spec.fetch(undefined as never, input) : await withClient(ctx, (ns) => spec.fetch(ns, input));
    if (flags.json) run.json(spec.toJson ? spec.toJson(data) : data);
    else for (const line of spec.human(data, input)) run.line(line);
    const code = spec.exitCode?.(data);
    if (code !== undefined) run.exitCode = code;
  });
}

/** A column of a listing: its header and how a row fills it. */
export type Column<T> = [header: string, value: (row: T, now: number) => Cell];

/** A command that lists things: a table for people, the rows as JSON with `--json`. */
export interface ListCommandSpec<F, A extends unknown[], D, T> {
  check?(flags: F, args: A): void;
  fetch(ns: Nightshift, input: CommandInput<F, A>): Promise<D>;
  /** The rows of the table. Default: the result itself (an array). */
  rows?(data: D): T[];
  columns: Column<T>[];
  /** What to say when there is nothing to list (on stderr, so stdout stays empty). */
  empty: string | ((input: CommandInput<F, A>) => string);
  /** Lines after the table. */
  footer?(data: D): string[];
  /** The JSON printed with `--json`. Default: the result itself. */
  toJson?(data: D): unknown;
}

/**
 * A listing command (`jobs list`, `queues list`, `workers`, …): `--json` prints the result as
 * JSON (an empty list as `[]`); otherwise an aligned table, or the `empty` text when there are no
 * rows. Ages are computed against one `now` per listing.
 */
export function listCommand<F extends object, A extends unknown[], D, T = D extends (infer R)[] ? R : never>(command: Command, run: CliRun, spec: ListCommandSpec<F, A, D, T>): Command {
  return clientCommand<F, A, D>(command, run, {
    ...(spec.check ? { check: spec.check } : {}),
    fetch: spec.fetch,
    ...(spec.toJson ? { toJson: spec.toJson } : {}),
    human: (data, input) => {
      const rows = spec.rows ? spec.rows(data) : (data as unknown as T[]);
      const footer = spec.footer?.(data) ?? [];
      if (rows.length === 0) {
        run.note(typeof spec.empty === 'function' ? spec.empty(input) : spec.empty);
        return footer;
      }
      const now = Date.now();
      const cells = rows.map((row) => spec.columns.map(([, value]) => value(row, now)));
      return [
        table(
          spec.columns.map(([header]) => header),
          cells,
        ),
        ...footer,
      ];
    },
  });
}
