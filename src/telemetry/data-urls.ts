// A `data:` URL to the end of its stack frame: `data:text/javascript,<encoded source>:12:5)`. An
// encoded URL holds no whitespace, quote or backslash, so it ends before the optional line:column
// and bracket that close the frame, at whitespace, or where a JSON string ends or escapes (`"`, `\n`).
const DATA_URL = /\bdata:[^\s"\\]*?(?=(?::\d+:\d+)?\)?(?:[\s"\\]|$))/g;

/**
 * Replaces every `data:` URL in `text` with its media type and length. A module loaded from a
 * `data:` URL (as a loader may do with transpiled code) puts its whole source — and any secret in
 * it — into every stack frame it appears in; none of it may reach a stored error or a log line.
 */
export function elideDataUrls(text: string): string {
  if (!text.includes('data:')) return text;
  return text.replace(DATA_URL, (url) => {
    const type = /^data:([\w.+-]+\/[\w.+-]+)?/.exec(url)?.[1] ?? '';
    return `data:${type},[${url.length} characters elided]`;
  });
}
