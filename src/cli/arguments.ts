import { parseArgs, type ParseArgsConfig } from 'node:util';
import type { Config } from '../config/keys.js';
import { loadConfig } from '../config/load.js';
import { ConfigError, UsageError } from '../errors.js';
import type { CommandIO } from './io.js';

/** node:util's parseArgs for a command's argv; what it refuses (unknown option, missing value) is a UsageError. */
export function parseArguments<T extends ParseArgsConfig>(
  argv: readonly string[],
  config: T,
): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs<T>({ ...config, args: [...argv] });
  } catch (error) {
    // Node throws plain TypeErrors told apart only by code (ERR_PARSE_ARGS_UNKNOWN_OPTION and its siblings).
    const code = (error as { code?: unknown }).code;
    if (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS')) {
      throw new UsageError(usageProblem(code, (error as Error).message), { cause: error });
    }
    throw error;
  }
}

/** `--output` of a command that prints text or JSON (text when not given). */
export function textOrJson(value: string | undefined): 'text' | 'json' {
  if (value === undefined || value === 'text' || value === 'json') return value ?? 'text';
  throw new UsageError(`--output must be text or json, got "${value}"`);
}

/**
 * What parseArgs refused, in hookguard's words. Node's own text for an unknown option ends in an unbalanced quote
 * (`as in '-- "--x"`: node lib/internal/errors.js, ERR_PARSE_ARGS_UNKNOWN_OPTION): said here whole.
 */
function usageProblem(code: string, message: string): string {
  const unknown = code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' ? /^Unknown option '(.*?)'/.exec(message)?.[1] : undefined;
  if (unknown === undefined) return message;
  // Node suggests `--` only where the command takes positional arguments.
  const positional = message.includes("after '--'")
    ? `; to name a file that starts with -, put it after --: -- ${unknown}`
    : '';
  return `unknown option ${unknown} (--help lists the options)${positional}`;
}

/** A command-line flag that sets a config key, and the value it was given (undefined: not given). */
export interface FlagSetting {
  flag: string;
  key: string;
  value: string | undefined;
}

/**
 * The config with the flags given laid over it. Each flag's value is checked by its key's own rule, and a value the
 * key refuses is a usage error naming the flag as the user typed it (`--argocd-version "v3.x": ...`), not the key.
 */
export function loadConfigWithFlags(
  io: CommandIO,
  configFile: string | undefined,
  flags: readonly FlagSetting[],
): Readonly<Config> {
  const given = flags.filter((setting) => setting.value !== undefined);
  try {
    return loadConfig({
      file: configFile ?? io.env.HOOKGUARD_CONFIG,
      env: io.env,
      overrides: Object.fromEntries(given.map((setting) => [setting.key, setting.value])),
    });
  } catch (error) {
    const flag = error instanceof ConfigError ? given.find((setting) => setting.key === error.key) : undefined;
    if (flag === undefined) throw error;
    const { problem } = error as ConfigError;
    // Most problems quote the value already ("v3.x" is not a semantic version); the others get it here.
    const value = problem.includes(flag.value as string) ? '' : ` "${flag.value}"`;
    throw new UsageError(`--${flag.flag}${value}: ${problem}`, { cause: error });
  }
}
