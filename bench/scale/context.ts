import type { BenchServer } from '../server.js';

/** What every scale measurement needs from the orchestrator. */
export interface ScaleContext {
  server: BenchServer;
  /** The bundled child script (bench/child.ts). */
  script: string;
  log(line: string): void;
  /** Node flags for children. */
  execArgv: string[];
}

/** Timeout for a child process to start. */
export const START_MS = 30_000;

/** Sleeps `ms` (pacing a measurement window, never synchronising on a result). */
export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** `50000` → `50k`, `1000000` → `1M`: labels of the curves' points. */
export function shortCount(n: number): string {
  if (n >= 1_000_000 && n % 100_000 === 0) return `${n / 1_000_000}M`;
  if (n >= 1_000 && n % 100 === 0) return `${n / 1_000}k`;
  return String(n);
}

/** `10000` → `10 kB` (SI: 1 kB = 1,000 bytes): labels of payload sizes; 0 is the no-op payload. */
export function shortBytes(n: number): string {
  if (n === 0) return 'no-op';
  if (n >= 1_000_000) return `${n / 1_000_000} MB`;
  if (n >= 1_000) return `${n / 1_000} kB`;
  return `${n} B`;
}
