import { parseArgs, type ParseArgsConfig } from 'node:util';
import { UsageError } from '../errors.js';

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
      throw new UsageError((error as Error).message, { cause: error });
    }
    throw error;
  }
}
