import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** The directory of the CLI tests' application (its nightshift.config.ts). */
export const CLI_APP = join(ROOT, 'test', 'fixtures', 'cli-app');

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the real `nightshift` CLI (its TypeScript entry through tsx) and collects its output. */
export function cli(args: string[], options: { env?: Record<string, string | undefined>; cwd?: string } = {}): Promise<CliResult> {
  return new Promise((resolve) => {
    const env: Record<string, string | undefined> = { ...process.env, NIGHTSHIFT_LOG_LEVEL: 'warn', ...options.env };
    for (const [k, v] of Object.entries(env)) if (v === undefined) delete env[k];
    const child = spawn(process.execPath, ['--import', 'tsx', join(ROOT, 'src', 'cli', 'main.ts'), ...args], {
      cwd: options.cwd ?? CLI_APP,
      env: env as NodeJS.ProcessEnv,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('exit', (code) => resolve({ code, stdout, stderr }));
  });
}

/** The entry point, for tests that start a long-running CLI process. */
export const CLI_ENTRY = 'src/cli/main.ts';
