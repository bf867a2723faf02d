// The rule catalog: every rule hookguard ships, as the RuleSet the config hands to the core.
import { ruleSet, type RuleSet } from '../core/rule.js';
import { deletePolicy } from './delete-policy.js';
import { hookFinalizer } from './hook-finalizer.js';
import { idempotentCleanup } from './idempotent-cleanup.js';
import { immutableUpdate } from './immutable-update.js';
import { minRuntime } from './min-runtime.js';
import { ttlFloor } from './ttl-floor.js';
import { versionRace } from './version-race.js';

export const builtInRules: RuleSet = ruleSet({
  mutations: [deletePolicy, idempotentCleanup, hookFinalizer, ttlFloor, minRuntime],
  updateJudges: [immutableUpdate],
  createValidators: [versionRace],
});

export interface CatalogEntry {
  id: string;
  webhook: 'mutating' | 'validating';
  operation: 'CREATE' | 'UPDATE';
  doc: string;
}

/** What `hookguard rules` lists: each rule with the webhook and operation it acts on. */
export function catalogOf(rules: RuleSet): CatalogEntry[] {
  return [
    ...rules.mutations.map((rule) => ({
      id: rule.id,
      webhook: 'mutating' as const,
      operation: 'CREATE' as const,
      doc: rule.doc,
    })),
    ...rules.updateJudges.map((rule) => ({
      id: rule.id,
      webhook: 'mutating' as const,
      operation: 'UPDATE' as const,
      doc: rule.doc,
    })),
    ...rules.createValidators.map((rule) => ({
      id: rule.id,
      webhook: 'validating' as const,
      operation: 'CREATE' as const,
      doc: rule.doc,
    })),
  ];
}
