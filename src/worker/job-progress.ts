import type { Database } from '../db/database.js';
import { OptionsInvalidError } from '../errors.js';

/** The largest progress value, in bytes of JSON. */
export const MAX_PROGRESS_BYTES = 4_096;
/** At most one progress write per job in this long. */
const EVERY_MS = 1_000;

/** The JSON of a progress value, or NS_OPTIONS_INVALID saying why it cannot be one. */
export function progressJson(value: unknown): string {
  let json: string | undefined;
  try {
    json = JSON.stringify(value);
  } catch (err) {
    throw new OptionsInvalidError('ctx.progress value', [{ path: '', message: `cannot be turned into JSON: ${err instanceof Error ? err.message : String(err)}` }]);
  }
  if (json === undefined) throw new OptionsInvalidError('ctx.progress value', [{ path: '', message: 'must be a JSON value (not undefined or a function)' }]);
  if (Buffer.byteLength(json) > MAX_PROGRESS_BYTES) {
    throw new OptionsInvalidError('ctx.progress value', [{ path: '', message: `is ${Buffer.byteLength(json)} bytes of JSON, over the ${MAX_PROGRESS_BYTES} allowed: report a summary` }]);
  }
  return json;
}

/**
 * The progress of one attempt: the latest value is written (fenced by the lease token) at most
 * once a second, and once more when the handler returns, so what `jobs show` finally says is the
 * last value reported. A failed write costs the value, never the job.
 */
export class JobProgress {
  private latest: string | undefined;
  private writing: Promise<void> | undefined;
  private timer: NodeJS.Timeout | undefined;
  private lastWriteAt = 0;

  constructor(
    private readonly db: Database,
    private readonly id: string,
    private readonly token: string,
    private readonly onError: (err: unknown) => void,
  ) {}

  set(json: string): void {
    this.latest = json;
    if (this.writing || this.timer) return;
    const wait = this.lastWriteAt + EVERY_MS - Date.now();
    if (wait <= 0) void this.write();
    else {
      this.timer = setTimeout(() => {
        this.timer = undefined;
        void this.write();
      }, wait);
      this.timer.unref?.();
    }
  }

  /** Writes the value not yet written, if any; resolves when done. */
  async flush(): Promise<void> {
    clearTimeout(this.timer);
    this.timer = undefined;
    await this.writing;
    if (this.latest !== undefined) await this.write();
  }

  private write(): Promise<void> {
    const json = this.latest;
    if (json === undefined) return Promise.resolve();
    this.latest = undefined;
    this.lastWriteAt = Date.now();
    this.writing = this.db.jobs
      .progress({ id: this.id, token: this.token, json })
      .then(
        () => undefined,
        (err: unknown) => this.onError(err),
      )
      .finally(() => {
        this.writing = undefined;
        if (this.latest !== undefined) this.set(this.latest);
      });
    return this.writing;
  }
}
