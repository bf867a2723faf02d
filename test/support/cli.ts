import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { staleBuild } from './fresh-build.js';
import { repoRoot } from './k8s-tools.js';

/**
 * The built CLI, run as a user runs it: a real process, arguments, stdin, exit status. (test/support/command.ts runs
 * commands in this process.) The vitest project of the tests that use it builds dist/ first when it is stale
 * (test/support/fresh-build.ts); a test elsewhere that imports this fails here rather than test an old build.
 */
export const cliPath = join(repoRoot, 'dist', 'cli', 'main.js');

/**
 * `serve`'s probe listener on a port the kernel picks (logged in "hookguard ready"), unless a test sets one: the
 * default 8080 would be taken by whichever of the servers tests run at once started first.
 */
export const PROBE_PORT_ANY: Readonly<Record<string, string>> = { HOOKGUARD_PROBE_PORT: '0' };

const stale = staleBuild();
if (stale !== undefined) throw new Error(`dist/ is older than src/ (${stale}): run npm run build (npm test does)`);

export interface CliRun {
  status: number | null;
  stdout: string;
  stderr: string;
}

export function runCli(args: readonly string[], input?: string, env: Record<string, string> = {}): CliRun {
  const result = spawnSync(process.execPath, [cliPath, ...args], {
    input,
    encoding: 'utf8',
    cwd: repoRoot,
    env: { PATH: process.env.PATH ?? '', ...PROBE_PORT_ANY, ...env },
    timeout: 30_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

/** runCli without blocking this process, for commands that talk to a server the test itself runs. */
export function runCliAsync(args: readonly string[], env: Record<string, string> = {}): Promise<CliRun> {
  const child = spawn(process.execPath, [cliPath, ...args], {
    cwd: repoRoot,
    env: { PATH: process.env.PATH ?? '', ...PROBE_PORT_ANY, ...env },
    timeout: 30_000,
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (status) => resolve({ status, stdout, stderr }));
  });
}
