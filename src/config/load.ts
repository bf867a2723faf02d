// The only module that reads process.env (through the `env` argument main passes in) or the config file.
// Config is loaded once: defaults, then the file, then the environment, then flags; checked against the
// declaration (src/config/keys.ts) and frozen.
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { isRecord } from '../core/objects.js';
import { ConfigError } from '../errors.js';
import { loadBuiltInAdvisories, mergeAdvisories } from './advisories.js';
import { ENV_KEYS, KEYS, type Config } from './keys.js';
import { fromText, scalarText, settingAt, validate } from './schema.js';

export interface ConfigSources {
  /** Path of the YAML config file, if any. */
  file?: string;
  /** The process environment; only HOOKGUARD_* keys are read. */
  env?: Readonly<Record<string, string | undefined>>;
  /** Command-line flags, as config paths ("server.port") to values; they win over everything. */
  overrides?: Readonly<Record<string, unknown>>;
}

type Plain = Record<string, unknown>;

function readFile(file: string): Plain {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new ConfigError('file', `cannot read ${file}: ${(error as Error).message}`);
  }
  let parsed: unknown;
  try {
    parsed = parse(text) ?? {};
  } catch (error) {
    throw new ConfigError('file', `${file} is not valid YAML: ${(error as Error).message}`);
  }
  if (!isRecord(parsed)) throw new ConfigError('file', `${file} must hold a mapping`);
  return parsed;
}

/** Sets a dotted path, as text converted to the type of the setting there (an unknown path fails later). */
function setFromText(target: Plain, path: string, raw: string): void {
  const keys = path.split('.');
  const last = keys.pop() as string;
  let node = target;
  for (const key of keys) {
    if (!isRecord(node[key])) node[key] = {};
    node = node[key] as Plain;
  }
  node[last] = fromText(settingAt(KEYS, path), raw);
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    Object.values(value).forEach(deepFreeze);
    Object.freeze(value);
  }
  return value;
}

/** Defaults, then the file, then the environment, then flags; validated and frozen. Throws ConfigError. */
export function loadConfig(sources: ConfigSources = {}): Readonly<Config> {
  const { advisories, ...settings } = sources.file === undefined ? {} : readFile(sources.file);
  for (const [variable, path] of Object.entries(ENV_KEYS)) {
    const raw = sources.env?.[variable];
    if (raw !== undefined && raw !== '') setFromText(settings, path, raw);
  }
  for (const [path, value] of Object.entries(sources.overrides ?? {})) {
    if (value !== undefined) setFromText(settings, path, scalarText(value));
  }
  return deepFreeze({ ...validate(KEYS, settings), advisories: mergeAdvisories(loadBuiltInAdvisories(), advisories) });
}
