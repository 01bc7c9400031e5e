/** The base of every nightshift error: a stable code, a hint, the issues found. */
import type { NightshiftErrorCode } from './codes.js';

/** One problem found while validating input: where it is, and what is wrong. */
export interface Issue {
  /** Dotted path of the offending field, `''` for the value as a whole. */
  path: string;
  /** What is wrong and, where possible, how to fix it. */
  message: string;
}

/** Base class of every nightshift error; `code` is stable (docs/errors.md says what to do about each), `hint` says how to fix it. */
export class NightshiftError extends Error {
  readonly code: NightshiftErrorCode;
  readonly hint: string | undefined;
  readonly issues: readonly Issue[];

  constructor(code: NightshiftErrorCode, message: string, options: { hint?: string; issues?: Issue[]; cause?: unknown } = {}) {
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

/** The issues as the lines of an error message. */
export function formatIssues(issues: readonly Issue[]): string {
  return issues.map((i) => `  - ${i.path || '(value)'}: ${i.message}`).join('\n');
}
