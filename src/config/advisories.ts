// The advisories: the built-in ones (data/advisories.yaml, shipped with the package) with the config's entries
// applied, each checked.
import { readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { isValidRange, normalizeArgoVersion } from '../core/argocd-version.js';
import { isRecord } from '../core/objects.js';
import type { Advisory, AdvisoryHooks, AdvisoryNote, AdvisoryTool, HookNaming } from '../core/types.js';
import { ConfigError } from '../errors.js';
import { builtInRules } from '../rules/index.js';
import { scalarText } from './schema.js';

const ADVISORY_KEYS = [
  'id',
  'summary',
  'tool',
  'hooks',
  'affected',
  'fixed',
  'checked',
  'references',
  'mitigatedBy',
  'mitigatedBySweep',
  'warnedBy',
  'notes',
  'disabled',
];
const NOTE_KEYS = ['affected', 'hookName', 'text'];
const HOOK_NAMINGS: readonly HookNaming[] = ['fixed', 'generated'];
const TOOLS: readonly AdvisoryTool[] = ['argocd', 'helm', 'helm-controller'];
const HOOK_PHASES: readonly AdvisoryHooks[] = ['sync', 'delete'];

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

function nonEmptyText(value: unknown, at: string): string {
  if (typeof value !== 'string' || value === '') throw new ConfigError(at, 'must be a non-empty string');
  return value;
}

function semverRange(value: unknown, at: string): string {
  const range = nonEmptyText(value, at);
  if (!isValidRange(range)) throw new ConfigError(at, `"${range}" is not a semver range`);
  return range;
}

function stringList(value: unknown, at: string): string[] {
  const list = value ?? [];
  if (!Array.isArray(list) || !list.every((item) => typeof item === 'string'))
    throw new ConfigError(at, 'must be a list of strings');
  return list;
}

/** A calendar day written YYYY-MM-DD (YAML reads an unquoted 2026-11-23 as that text). */
function calendarDay(value: unknown, at: string): string {
  const day = scalarText(value);
  const parsed = /^\d{4}-\d{2}-\d{2}$/.test(day) ? new Date(`${day}T00:00:00Z`) : undefined;
  if (!parsed || Number.isNaN(parsed.getTime()) || parsed.toISOString().slice(0, 10) !== day)
    throw new ConfigError(at, `must be a date like 2026-11-23, got ${JSON.stringify(value)}`);
  return day;
}

function validateNotes(value: unknown, at: string): AdvisoryNote[] {
  const notes = value ?? [];
  if (!Array.isArray(notes)) throw new ConfigError(at, 'must be a list');
  return notes.map((note: unknown, index) => {
    const noteAt = `${at}[${index}]`;
    if (!isRecord(note)) throw new ConfigError(noteAt, 'must be a mapping with affected and text');
    const unknown = Object.keys(note).find((name) => !NOTE_KEYS.includes(name));
    if (unknown !== undefined) throw new ConfigError(`${noteAt}.${unknown}`, 'unknown key');
    const hookName = note.hookName;
    if (hookName !== undefined && !HOOK_NAMINGS.includes(hookName as HookNaming))
      throw new ConfigError(`${noteAt}.hookName`, `must be one of ${HOOK_NAMINGS.join(', ')}`);
    return {
      affected: semverRange(note.affected, `${noteAt}.affected`),
      ...(hookName !== undefined ? { hookName: hookName as HookNaming } : {}),
      text: nonEmptyText(note.text, `${noteAt}.text`),
    };
  });
}

function knownRules(ids: string[], known: (id: string) => boolean, at: string): string[] {
  const unknownRule = ids.find((id) => !known(id));
  if (unknownRule !== undefined) throw new ConfigError(at, `unknown rule "${unknownRule}"`);
  return ids;
}

function validateAdvisory(candidate: Record<string, unknown>, at: string): Advisory {
  const id = nonEmptyText(candidate.id, `${at}.id`);
  const summary = nonEmptyText(candidate.summary, `${at}.summary`);
  const tool = candidate.tool;
  if (tool !== undefined && !TOOLS.includes(tool as AdvisoryTool))
    throw new ConfigError(`${at}.tool`, `must be one of ${TOOLS.join(', ')}`);
  const hooks = candidate.hooks;
  if (hooks !== undefined && !HOOK_PHASES.includes(hooks as AdvisoryHooks))
    throw new ConfigError(`${at}.hooks`, `must be one of ${HOOK_PHASES.join(', ')}`);
  const affected = semverRange(candidate.affected, `${at}.affected`);
  if (candidate.fixed !== undefined && normalizeArgoVersion(scalarText(candidate.fixed)) === undefined) {
    throw new ConfigError(`${at}.fixed`, 'must be a version');
  }
  const references = stringList(candidate.references, `${at}.references`);
  // mitigatedBy names what version-race requires in place; warnedBy, rules that only warn (both run at CREATE).
  const mitigatedBy = knownRules(
    stringList(candidate.mitigatedBy, `${at}.mitigatedBy`),
    (ruleId) => builtInRules.mitigatingIds.has(ruleId),
    `${at}.mitigatedBy`,
  );
  const warnedBy = knownRules(
    stringList(candidate.warnedBy, `${at}.warnedBy`),
    (ruleId) => builtInRules.mutations.some((rule) => rule.id === ruleId),
    `${at}.warnedBy`,
  );
  // Mitigations (and version-race's denials) concern the hook finalizer, which only sync-phase hooks get.
  if (hooks === 'delete' && mitigatedBy.length > 0)
    throw new ConfigError(`${at}.mitigatedBy`, 'an advisory about delete hooks can only be warned of (warnedBy)');
  const mitigatedBySweep = candidate.mitigatedBySweep ?? false;
  if (typeof mitigatedBySweep !== 'boolean') throw new ConfigError(`${at}.mitigatedBySweep`, 'must be true or false');
  return {
    id,
    summary,
    ...(tool === 'helm' || tool === 'helm-controller' ? { tool } : {}),
    ...(hooks === 'delete' ? { hooks: 'delete' as const } : {}),
    affected,
    ...(candidate.fixed !== undefined ? { fixed: scalarText(candidate.fixed) } : {}),
    ...(candidate.checked !== undefined ? { checked: calendarDay(candidate.checked, `${at}.checked`) } : {}),
    references,
    mitigatedBy,
    mitigatedBySweep,
    warnedBy,
    notes: validateNotes(candidate.notes, `${at}.notes`),
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
