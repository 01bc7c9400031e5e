import { elideDataUrls } from '../telemetry/data-urls.js';

/**
 * Cleans text before it is stored: NUL bytes removed (PostgreSQL text cannot hold them), lone
 * surrogates replaced, length bounded. A job must never get stuck because its failure could not
 * be recorded.
 */
export function cleanText(value: unknown, maxLength: number): string {
  let s = typeof value === 'string' ? value : textOf(value);
  if (s.includes('\u0000')) s = s.replaceAll('\u0000', '\uFFFD');
  if (!s.isWellFormed()) s = s.toWellFormed();
  if (s.length > maxLength) s = `${s.slice(0, maxLength - 1)}…`;
  // Slicing may split a surrogate pair.
  return s.isWellFormed() ? s : s.toWellFormed();
}

/**
 * Any value as text, never throwing: JSON where it has some, else `String()`, else a placeholder
 * (a thrown value may be a proxy whose every access throws, or an object whose `toJSON` and
 * `toString` throw).
 */
function textOf(value: unknown): string {
  if (typeof value === 'string') return value;
  try {
    const json = JSON.stringify(value);
    if (typeof json === 'string') return json;
  } catch {
    // Fall through to String().
  }
  try {
    return String(value);
  } catch {
    return '[a value that cannot be turned into text]';
  }
}

/** Reads a property that may be a throwing getter (or a proxy's trap): undefined when it throws. */
function read(get: () => unknown): unknown {
  try {
    return get();
  } catch {
    return undefined;
  }
}

/** Message, stack and code of anything thrown, cleaned and bounded for storage. Never throws. */
export function describeError(err: unknown): { message: string; stack?: string; code?: string } {
  // `instanceof` itself can throw (a proxy's getPrototypeOf trap).
  if (read(() => err instanceof Error) === true) {
    const e = err as Error;
    const message = read(() => e.message);
    const name = read(() => e.name);
    const stack = read(() => e.stack);
    const code = read(() => (e as { code?: unknown }).code);
    const text = (message === undefined || message === '' ? '' : textOf(message)) || (name === undefined || name === '' ? '' : textOf(name)) || 'Error';
    return {
      message: cleanText(elideDataUrls(text), 4_000),
      ...(typeof stack === 'string' && stack ? { stack: cleanText(elideDataUrls(stack), 16_000) } : {}),
      ...(typeof code === 'string' ? { code: cleanText(code, 100) } : {}),
    };
  }
  return { message: cleanText(elideDataUrls(`non-Error thrown: ${textOf(err)}`), 4_000) };
}
