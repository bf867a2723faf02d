// `hookguard --help` as a user reads it: the built CLI in a real process.
import { describe, expect, it } from 'vitest';
import { EXIT } from '../../src/errors.js';
import { runCli } from '../support/cli.js';

describe('hookguard --help', () => {
  it('lists every exit status the CLI can return, each with what it means', () => {
    const run = runCli(['--help']);
    expect(run.status).toBe(EXIT.ok);
    const section = /\nExit status:\n((?: {2}.*\n)+)/.exec(run.stdout)?.[1] ?? '';
    const listed = [...section.matchAll(/^ {2}(\d) {2}\S/gm)].map((match) => Number(match[1]));
    expect(listed).toEqual([...new Set(Object.values(EXIT))].sort());
  });
});
