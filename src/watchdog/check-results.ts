import type { CheckStatusValue, StoredResult } from '../db/watchdog.js';
import { cleanText, describeError } from '../jobs/error-text.js';

/** A run's results, ready to apply: each subject once, and whether the run itself failed. */
export interface NormalisedRun {
  results: StoredResult[];
  /** The worst status. */
  status: CheckStatusValue;
  /** True when the check threw, timed out or returned something else than results: only subject `''` is known. */
  failed: boolean;
}

const STATUSES: readonly CheckStatusValue[] = ['ok', 'warning', 'critical'];
const RANK: Record<CheckStatusValue, number> = { ok: 0, warning: 1, critical: 2 };
const MAX_MESSAGE = 2_000;
const MAX_SUBJECT = 200;
const MAX_DETAILS_BYTES = 8_192;
/** More subjects than this in one run are cut (the alert says so): a check reporting per row of a table is a bug. */
const MAX_SUBJECTS = 500;

/** The worse of two statuses. */
export function worse(a: CheckStatusValue, b: CheckStatusValue): CheckStatusValue {
  return RANK[b] > RANK[a] ? b : a;
}

/** Whether a status is bad (an alert's level). */
export function isBad(s: CheckStatusValue): s is 'warning' | 'critical' {
  return s !== 'ok';
}

/** The critical result of a run that failed: the check threw, timed out or returned nonsense. */
export function failedRun(message: string): NormalisedRun {
  return { results: [{ subject: '', status: 'critical', message: cleanText(message, MAX_MESSAGE), details: null }], status: 'critical', failed: true };
}

/** The result of a check that threw: critical, with the error's message. */
export function thrownRun(err: unknown): NormalisedRun {
  return failedRun(`check failed: ${describeError(err).message}`);
}

/**
 * Checks what a check returned and turns it into stored results: one per subject (a subject
 * reported twice keeps its worst result), messages and subjects cleaned and bounded, details
 * bounded in size. Anything that is not a result makes the whole run a failed, critical one.
 */
export function normaliseOutcome(outcome: unknown): NormalisedRun {
  const list = Array.isArray(outcome) ? (outcome as unknown[]) : [outcome];
  const bySubject = new Map<string, StoredResult>();
  for (const [i, item] of list.entries()) {
    const problem = resultProblem(item);
    if (problem) return failedRun(`check returned an invalid result${Array.isArray(outcome) ? ` at index ${i}` : ''}: ${problem}`);
    const r = item as { status: CheckStatusValue; message: string; details?: unknown; subject?: string };
    const subject = cleanText(r.subject ?? '', MAX_SUBJECT);
    const stored: StoredResult = { subject, status: r.status, message: cleanText(r.message, MAX_MESSAGE), details: boundedDetails(r.details) };
    const before = bySubject.get(subject);
    if (!before || RANK[stored.status] > RANK[before.status]) bySubject.set(subject, stored);
  }
  let results = [...bySubject.values()];
  let status: CheckStatusValue = 'ok';
  for (const r of results) status = worse(status, r.status);
  if (results.length > MAX_SUBJECTS) {
    results = results.sort((a, b) => RANK[b.status] - RANK[a.status]).slice(0, MAX_SUBJECTS);
  }
  return { results, status, failed: false };
}

function resultProblem(item: unknown): string | undefined {
  if (typeof item !== 'object' || item === null) return `expected { status, message }, got ${item === null ? 'null' : typeof item}`;
  const r = item as Record<string, unknown>;
  if (!STATUSES.includes(r.status as CheckStatusValue)) return `status must be 'ok', 'warning' or 'critical', got ${JSON.stringify(r.status) ?? 'undefined'}`;
  if (typeof r.message !== 'string') return 'message must be a string';
  if (r.subject !== undefined && typeof r.subject !== 'string') return 'subject must be a string';
  if (r.details !== undefined && (typeof r.details !== 'object' || r.details === null || Array.isArray(r.details))) return 'details must be an object';
  return undefined;
}

function boundedDetails(details: unknown): Record<string, unknown> | null {
  if (details === undefined) return null;
  let json: string | undefined;
  try {
    json = JSON.stringify(details);
  } catch {
    return { note: 'details could not be stored as JSON' };
  }
  if (json === undefined) return null;
  if (json.length > MAX_DETAILS_BYTES) return { note: `details left out: ${json.length} bytes of JSON, over ${MAX_DETAILS_BYTES}` };
  // Through JSON and back: Dates become strings, undefined fields go, NUL bytes are refused by jsonb.
  return JSON.parse(cleanText(json, MAX_DETAILS_BYTES + 1)) as Record<string, unknown>;
}
