import { describe, expect, it } from 'vitest';
import { parseArguments } from '../../src/cli/arguments.js';
import { CHECK_USAGE } from '../../src/cli/check.js';
import { SERVE_USAGE } from '../../src/cli/serve.js';
import { SWEEP_USAGE } from '../../src/cli/sweep.js';
import { ConfigError, EXIT, InputError, UsageError, UserError } from '../../src/errors.js';

describe('user errors', () => {
  it.each([
    ['UsageError', new UsageError('--output must be text or json, got "xml"')],
    ['ConfigError', new ConfigError('server.port', 'must be an integer 1..65535, got 0')],
    ['InputError', new InputError('stdin document 1: invalid YAML: bad indentation')],
  ])('%s is a UserError exiting with the bad-input status', (name, error) => {
    expect(error).toBeInstanceOf(UserError);
    expect(error.exitCode).toBe(EXIT.badInput);
    expect(error.name).toBe(name);
  });

  it('ConfigError names the key in its message', () => {
    const error = new ConfigError('server.port', 'must be an integer 1..65535, got 0');
    expect([error.key, error.message]).toEqual([
      'server.port',
      'invalid config: server.port: must be an integer 1..65535, got 0',
    ]);
  });
});

describe('parseArguments', () => {
  const options = { output: { type: 'string' }, apply: { type: 'boolean', default: false } } as const;

  it('parses like node:util parseArgs', () => {
    expect(parseArguments(['--output', 'json', 'a.yaml'], { options, allowPositionals: true })).toEqual({
      values: { output: 'json', apply: false },
      positionals: ['a.yaml'],
    });
  });

  it.each([
    // Node's own text ends in an unbalanced quote (as in '-- "--frobnicate"): hookguard says it whole.
    ['an unknown option', ['--frobnicate'], /^unknown option --frobnicate \(--help lists the options\)$/],
    ['an option without its value', ['--output'], /^Option '--output <value>' argument missing$/],
    ['a positional where none is allowed', ['a.yaml'], /^Unexpected argument 'a\.yaml'/],
  ])('turns %s into a UsageError saying what was refused', (_name, argv, message) => {
    const error = captureError(() => parseArguments(argv, { options }));
    expect(error).toBeInstanceOf(UsageError);
    expect((error as UsageError).message).toMatch(message);
    expect((error as UsageError).cause).toHaveProperty('code');
  });

  it('lets a mistake in the option declarations through as it is: a bug, not bad input', () => {
    const error = captureError(() => parseArguments([], { options: { output: { type: 'text' as 'string' } } }));
    expect(error).not.toBeInstanceOf(UserError);
    expect(error).toHaveProperty('code', 'ERR_INVALID_ARG_TYPE');
  });
});

describe('exit statuses in the usage texts', () => {
  it.each([
    ['check', CHECK_USAGE, [EXIT.ok, EXIT.denied, EXIT.badInput, EXIT.internal]],
    ['serve', SERVE_USAGE, [EXIT.ok, EXIT.shutdownForced, EXIT.badInput, EXIT.internal]],
    ['sweep', SWEEP_USAGE, [EXIT.ok, EXIT.failed, EXIT.badInput, EXIT.internal]],
  ])('%s lists every status it exits with', (_name, usage, statuses) => {
    const listed = /Exit status: (.*)\.$/s.exec(usage)?.[1] ?? '';
    const numbers = [...listed.matchAll(/(?:^|, |\n)(\d) /g)].map((match) => Number(match[1]));
    expect(numbers).toEqual(statuses);
  });
});

function captureError(run: () => unknown): unknown {
  try {
    run();
  } catch (error) {
    return error;
  }
  throw new Error('expected an error, none was thrown');
}
