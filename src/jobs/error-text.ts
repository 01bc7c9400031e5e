/**
 * Cleans text before it is stored: NUL bytes removed (PostgreSQL text cannot hold them), lone
 * surrogates replaced, length bounded. A job must never get stuck because its failure could not
 * be recorded.
 */
export function cleanText(value: unknown, maxLength: number): string {
  let s = typeof value === 'string' ? value : String(value);
  if (s.includes('\u0000')) s = s.replaceAll('\u0000', '\uFFFD');
  if (!s.isWellFormed()) s = s.toWellFormed();
  if (s.length > maxLength) s = `${s.slice(0, maxLength - 1)}…`;
  // Slicing may split a surrogate pair.
  return s.isWellFormed() ? s : s.toWellFormed();
}

/** Message, stack and code of anything thrown, cleaned and bounded for storage. */
export function describeError(err: unknown): { message: string; stack?: string; code?: string } {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return {
      message: cleanText(err.message || err.name, 4_000),
      ...(err.stack ? { stack: cleanText(err.stack, 16_000) } : {}),
      ...(typeof code === 'string' ? { code: cleanText(code, 100) } : {}),
    };
  }
  let text: string;
  try {
    text = typeof err === 'string' ? err : JSON.stringify(err) ?? String(err);
  } catch {
    text = String(err);
  }
  return { message: cleanText(`non-Error thrown: ${text}`, 4_000) };
}
