import type { MutationRule } from '../core/rule.js';
import { deletePolicy } from './delete-policy.js';
import { hookFinalizer } from './hook-finalizer.js';
import { idempotentCleanup } from './idempotent-cleanup.js';
import { immutableUpdate } from './immutable-update.js';
import { minRuntime } from './min-runtime.js';
import { ttlFloor } from './ttl-floor.js';
import { versionRace } from './version-race.js';

/** CREATE mutations, in the order they run. */
export const mutationRules: readonly MutationRule[] = [
  deletePolicy,
  idempotentCleanup,
  hookFinalizer,
  ttlFloor,
  minRuntime,
];

export { immutableUpdate, versionRace };

export interface CatalogEntry {
  id: string;
  webhook: 'mutating' | 'validating';
  operation: 'CREATE' | 'UPDATE';
  doc: string;
}

export const ruleCatalog: readonly CatalogEntry[] = [
  ...mutationRules.map((rule) => ({
    id: rule.id,
    webhook: 'mutating' as const,
    operation: 'CREATE' as const,
    doc: rule.doc,
  })),
  { id: immutableUpdate.id, webhook: 'mutating', operation: 'UPDATE', doc: immutableUpdate.doc },
  { id: versionRace.id, webhook: 'validating', operation: 'CREATE', doc: versionRace.doc },
];

/** Rules an object may opt out of with hookguard.io/skip; the judges cannot be skipped. */
export const skippableRuleIds: ReadonlySet<string> = new Set(mutationRules.map((rule) => rule.id));

/** Rules an advisory can name as its mitigation: everything but version-race, which judges them. */
export const mitigatingRuleIds: ReadonlySet<string> = new Set([...skippableRuleIds, immutableUpdate.id]);
