// The advisories: the built-in ones (data/advisories.yaml, shipped with the package) with the config's entries
// applied, each checked.
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { isValidRange, normalizeArgoVersion } from '../core/argocd-version.js';
import { isRecord } from '../core/objects.js';
import type { Advisory } from '../core/types.js';
import { ConfigError } from '../errors.js';
import { builtInRules } from '../rules/index.js';
import { scalarText } from './schema.js';

const ADVISORY_KEYS = ['id', 'summary', 'affected', 'fixed', 'references', 'mitigatedBy', 'disabled'];

/** The `advisories` row of the docs' configuration table: a list with a shape of its own, not a key of KEYS. */
export const ADVISORIES_DOC = {
  key: 'advisories',
  default: 'the built-in ones ([Advisories](rules.md#advisories))',
  accepts: 'a list of advisories',
  doc: 'An entry with a built-in id overrides the fields it gives; `disabled: true` removes it; a new id adds one.',
};

/** Built-in advisories with the config's entries applied: same id overrides the given fields, new ids are added. */
export function mergeAdvisories(builtIn: readonly Advisory[], entries: unknown, key = 'advisories'): Advisory[] {
  if (entries === undefined) return [...builtIn];
  if (!Array.isArray(entries)) throw new ConfigError(key, 'must be a list');
  const merged = new Map(builtIn.map((advisory) => [advisory.id, advisory]));
  entries.forEach((entry, index) => {
    const at = `${key}[${index}]`;
    if (!isRecord(entry) || typeof entry.id !== 'string' || entry.id === '')
      throw new ConfigError(`${at}.id`, 'every advisory needs an id');
    const unknown = Object.keys(entry).find((name) => !ADVISORY_KEYS.includes(name));
    if (unknown !== undefined) throw new ConfigError(`${at}.${unknown}`, 'unknown key');
    if (entry.disabled === true) {
      merged.delete(entry.id);
      return;
    }
    const { disabled: _disabled, ...fields } = entry;
    merged.set(entry.id, validateAdvisory({ ...merged.get(entry.id), ...fields }, at));
  });
  return [...merged.values()];
}

function validateAdvisory(candidate: Record<string, unknown>, at: string): Advisory {
  for (const name of ['id', 'summary', 'affected'] as const) {
    if (typeof candidate[name] !== 'string' || candidate[name] === '')
      throw new ConfigError(`${at}.${name}`, 'must be a non-empty string');
  }
  if (!isValidRange(candidate.affected as string))
    throw new ConfigError(`${at}.affected`, `"${String(candidate.affected)}" is not a semver range`);
  if (candidate.fixed !== undefined && normalizeArgoVersion(scalarText(candidate.fixed)) === undefined) {
    throw new ConfigError(`${at}.fixed`, 'must be a version');
  }
  for (const name of ['references', 'mitigatedBy'] as const) {
    const list = candidate[name] ?? [];
    if (!Array.isArray(list) || !list.every((item) => typeof item === 'string'))
      throw new ConfigError(`${at}.${name}`, 'must be a list of strings');
  }
  const mitigatedBy = (candidate.mitigatedBy ?? []) as string[];
  const unknownRule = mitigatedBy.find((id) => !builtInRules.mitigatingIds.has(id));
  if (unknownRule !== undefined) throw new ConfigError(`${at}.mitigatedBy`, `unknown rule "${unknownRule}"`);
  return {
    id: candidate.id as string,
    summary: candidate.summary as string,
    affected: candidate.affected as string,
    ...(candidate.fixed !== undefined ? { fixed: scalarText(candidate.fixed) } : {}),
    references: (candidate.references ?? []) as string[],
    mitigatedBy,
  };
}

let builtInAdvisories: readonly Advisory[] | undefined;

/** The advisories shipped with the package (data/advisories.yaml). */
export function loadBuiltInAdvisories(): readonly Advisory[] {
  builtInAdvisories ??= mergeAdvisories(
    [],
    parse(readFileSync(new URL('../../data/advisories.yaml', import.meta.url), 'utf8')),
    'data/advisories.yaml',
  );
  return builtInAdvisories;
}
