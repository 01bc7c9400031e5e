import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { directoryStore, type ArtifactStore } from '../../src/index.js';

/** A directory store under a fresh temporary root (one per test), and that root. */
export function tempStore(options: { path?: (run: { pipeline: string; key: string }) => string } = {}): { store: ArtifactStore; root: string } {
  const root = mkdtempSync(join(tmpdir(), 'ns-artifacts-'));
  return { store: directoryStore({ root, ...options }), root };
}
