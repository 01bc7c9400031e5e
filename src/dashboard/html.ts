/**
 * The one escaping function of the dashboard and the template tag built on it. Every value put
 * into a page goes through {@link html}: a string is escaped, an {@link Html} (the result of
 * another `html` template) is kept as it is, an array is each of its items, and null, undefined
 * and false are nothing. So a job's payload, error or name can only ever be text on the page.
 */
export class Html {
  constructor(readonly text: string) {}

  toString(): string {
    return this.text;
  }
}

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;', '`': '&#96;' };

/** Escapes text for HTML element content and quoted attribute values. */
export function esc(value: unknown): string {
  return String(value).replace(/[&<>"'`]/g, (c) => ESCAPES[c]!);
}

function part(value: unknown): string {
  if (value === null || value === undefined || value === false) return '';
  if (value instanceof Html) return value.text;
  if (Array.isArray(value)) return value.map(part).join('');
  return esc(value);
}

/** A template of HTML whose every interpolated value is escaped (see {@link Html}). */
export function html(strings: TemplateStringsArray, ...values: unknown[]): Html {
  let out = strings[0]!;
  for (let i = 0; i < values.length; i++) out += part(values[i]) + strings[i + 1]!;
  return new Html(out);
}

/** Markup written by the dashboard's own code (never job data): a chart's data URL, a constant. */
export function trusted(text: string): Html {
  return new Html(text);
}
