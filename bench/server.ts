import pg from 'pg';
import { startEmbeddedPostgres, type EmbeddedPostgresHandle } from '../src/dev/embedded-postgres.js';

/**
 * Server settings. Durability stays on (fsync, synchronous_commit, full_page_writes: the figures
 * are honest); only capacity is raised. max_connections=300 comes from the embedded helper.
 */
export const SERVER_FLAGS = ['-c', 'shared_buffers=256MB', '-c', 'fsync=on', '-c', 'synchronous_commit=on', '-c', 'full_page_writes=on'];

/** The benchmark's PostgreSQL: one server, a fresh database per system, scenario and run. */
export class BenchServer {
  private constructor(
    private readonly pgHandle: EmbeddedPostgresHandle | undefined,
    private readonly baseUrl: string,
    readonly admin: pg.Pool,
  ) {}

  /** Starts an embedded server, or uses `DATABASE_URL` when given (databases are created in it). */
  static async start(extraFlags: string[] = [], log?: (line: string) => void): Promise<BenchServer> {
    let handle: EmbeddedPostgresHandle | undefined;
    let url = process.env.BENCH_DATABASE_URL;
    if (!url) {
      handle = await startEmbeddedPostgres({ flags: [...SERVER_FLAGS, ...extraFlags], ...(log ? { log } : {}) });
      url = handle.url;
    }
    const admin = new pg.Pool({ connectionString: url, max: 2 });
    return new BenchServer(handle, url, admin);
  }

  /** The server's connection URL for database `db`. */
  url(db: string): string {
    const u = new URL(this.baseUrl);
    u.pathname = `/${db}`;
    return u.toString();
  }

  get port(): number {
    return Number(new URL(this.baseUrl).port);
  }

  /** Version and the settings that matter for the figures. */
  async describe(): Promise<Record<string, string>> {
    const { rows } = await this.admin.query<{ name: string; setting: string; unit: string | null }>(
      `SELECT name, setting, unit FROM pg_settings
       WHERE name IN ('server_version', 'fsync', 'synchronous_commit', 'full_page_writes', 'shared_buffers', 'max_connections', 'wal_level', 'max_wal_size')`,
    );
    return Object.fromEntries(rows.map((r) => [r.name, r.unit === '8kB' ? `${(Number(r.setting) * 8) / 1024} MB` : `${r.setting}${r.unit && r.unit !== '8kB' ? ` ${r.unit}` : ''}`]));
  }

  async createDatabase(name: string, template?: string): Promise<string> {
    await this.admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
    await this.admin.query(`CREATE DATABASE "${name}"${template ? ` TEMPLATE "${template}"` : ''}`);
    return this.url(name);
  }

  async dropDatabase(name: string): Promise<void> {
    await this.admin.query(`DROP DATABASE IF EXISTS "${name}" WITH (FORCE)`);
  }

  /** Settles the database before a measured phase: statistics current, dirty pages flushed. */
  async settle(url: string): Promise<void> {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      await c.query('VACUUM ANALYZE');
      // Needs superuser or pg_checkpoint; without it the run is only a little noisier.
      await c.query('CHECKPOINT').catch(() => undefined);
    } finally {
      await c.end();
    }
  }

  async stop(): Promise<void> {
    await this.admin.end().catch(() => undefined);
    await this.pgHandle?.destroy();
  }
}
