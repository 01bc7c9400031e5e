import { createNightshift, type Nightshift, type NightshiftOptions } from '../../../src/index.js';
import { silentLogger } from '../../../src/telemetry/logger.js';
import { TcpProxy } from '../../support/tcp-proxy.js';
import { Fleet } from './fleet.js';

/**
 * The processes, proxies and clients of one scenario run. A scenario makes them here instead of
 * ending in its own try/finally: the harness (runScenario) closes them all when the run ends,
 * last made first, even when it failed, and a failure's message carries every process's output.
 */
export class ScenarioResources {
  private readonly closers: { what: string; close(): Promise<unknown> | unknown }[] = [];
  private readonly fleets: Fleet[] = [];
  private readonly details: (() => string)[] = [];

  constructor(
    private readonly url: string,
    private readonly schema: string,
  ) {}

  /** Real nightshift processes started from `script`; any still running at the end are killed. */
  fleet(script: string, env: Record<string, string>): Fleet {
    const fleet = new Fleet(script, env);
    this.fleets.push(fleet);
    this.defer(`the processes of ${script}`, () => fleet.close());
    return fleet;
  }

  /** A listening proxy in front of the scenario's PostgreSQL (or the server of `target`); closed at the end. */
  async proxy(target = this.url): Promise<TcpProxy> {
    const proxy = TcpProxy.for(target);
    await proxy.listen();
    this.defer('the proxy', () => proxy.close());
    return proxy;
  }

  /** A client on the scenario's schema (silent logger unless given one); stopped at the end. */
  nightshift(options: Partial<NightshiftOptions> = {}): Nightshift {
    const ns = createNightshift({ databaseUrl: this.url, schema: this.schema, logger: silentLogger(), ...options });
    this.defer('a nightshift client', () => ns.stop());
    return ns;
  }

  /** Anything else to close at the end (a pool, a Redis server, a stream client). */
  defer(what: string, close: () => Promise<unknown> | unknown): void {
    this.closers.push({ what, close });
  }

  /** More for a failure report (a server's log, say): `describe` is called only when the run fails. */
  detail(describe: () => string): void {
    this.details.push(describe);
  }

  /** The tail of every process's output and the details, for a failure report. */
  outputs(): string {
    return [...this.fleets.map((f) => f.outputs()), ...this.details.map((d) => d())].join('\n');
  }

  /**
   * Runs a part of the scenario with resources of its own, closed when the part ends however it
   * ends — for parts that must clean up before the next begins (a server cluster per mode). A
   * failure names the part and carries its outputs.
   */
  async part<T>(label: string, body: (part: ScenarioResources) => Promise<T>): Promise<T> {
    const part = new ScenarioResources(this.url, this.schema);
    try {
      return await body(part);
    } catch (err) {
      throw new Error(`${label}: ${String(err)}\n${part.outputs()}`, { cause: err });
    } finally {
      await part.closeAll();
    }
  }

  /** Closes everything, last made first; every closer runs even when one fails (the first failure is thrown after). */
  async closeAll(): Promise<void> {
    const failures: string[] = [];
    for (const c of this.closers.splice(0).reverse()) {
      try {
        await c.close();
      } catch (err) {
        failures.push(`closing ${c.what}: ${String(err)}`);
      }
    }
    if (failures.length > 0) throw new Error(failures.join('; '));
  }
}
