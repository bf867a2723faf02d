// `hookguard --help` and each command's own help as a user reads them.
import { beforeAll, describe, expect, it } from 'vitest';
import { COMMAND_NAMES } from '../../src/cli/hookguard.js';
import { EXIT } from '../../src/errors.js';
import { runCli } from '../support/cli.js';
import { runCommand } from '../support/command.js';

let help: string;
beforeAll(() => {
  // The built CLI in a real process, once: each command below runs in this one, through the same runHookguard.
  const run = runCli(['--help']);
  expect(run).toMatchObject({ status: EXIT.ok, stderr: '' });
  help = run.stdout;
});

describe('hookguard --help', () => {
  it('lists every exit status the CLI can return, each with what it means', () => {
    const section = /\nExit status:\n((?: {2}.*\n)+)/.exec(help)?.[1] ?? '';
    const listed = [...section.matchAll(/^ {2}(\d) {2}\S/gm)].map((match) => Number(match[1]));
    expect(listed).toEqual([...new Set(Object.values(EXIT))].sort());
  });

  it('names every command in its list of commands', () => {
    const section = /\nCommands:\n((?: {2}.*\n)+)/.exec(help)?.[1] ?? '';
    expect([...section.matchAll(/^ {2}(\S+) /gm)].map((match) => match[1])).toEqual(COMMAND_NAMES);
  });
});

describe.each(COMMAND_NAMES)('hookguard %s', (name) => {
  it.each(['-h', '--help'])(`answers %s with its usage on stdout and exit status ${EXIT.ok}`, async (flag) => {
    const run = await runCommand([name, flag]);
    expect(run).toMatchObject({ status: EXIT.ok, stderr: '' });
    expect(run.stdout).toMatch(new RegExp(`^Usage: hookguard ${name}[ \\n]`));
    // The same text as the command's section of hookguard --help: one usage per command, kept in one place.
    expect(help).toContain(`\n${run.stdout}`);
  });

  it('says an unknown option is unknown, and that --help lists the options', async () => {
    const run = await runCommand([name, '--no-such-option']);
    expect(run.status).toBe(EXIT.badInput);
    expect(run.stderr).toMatch(
      new RegExp(`^hookguard ${name}: unknown option --no-such-option \\(--help lists the options\\)[;\\n]`),
    );
  });
});
