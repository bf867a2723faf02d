// hookguard's commands run in this process, through the CommandIO they take (src/cli/io.ts): what the process would
// print and its exit status, without starting one. test/support/cli.ts runs the built CLI as a real process.
import { runHookguard } from '../../src/cli/hookguard.js';
import type { CliRun } from './cli.js';

/** `hookguard ARGS` with `input` as stdin and `env` as all of its environment. */
export async function runCommand(
  args: readonly string[],
  input?: string,
  env: Record<string, string> = {},
): Promise<CliRun> {
  let stdout = '';
  let stderr = '';
  const status = await runHookguard(args, {
    stdout: (text) => (stdout += text),
    stderr: (text) => (stderr += text),
    readStdin: () => Promise.resolve(input ?? ''),
    env,
  });
  return { status, stdout, stderr };
}
