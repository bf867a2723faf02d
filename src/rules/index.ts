// The rule catalog: every rule hookguard ships, as the RuleSet the config hands to the core.
import { ruleSet, type RuleSet, type Stage } from '../core/rule.js';
import { deletePolicy } from './delete-policy.js';
import { foreignFinalizer } from './foreign-finalizer.js';
import { hookFinalizer } from './hook-finalizer.js';
import { hookLabel } from './hook-label.js';
import { hookTtl } from './hook-ttl.js';
import { hookDeadline } from './hook-deadline.js';
import { hookPodRestartPolicy, hookPodRestartPolicyAtRender } from './hook-pod-restart-policy.js';
import { hookOutputLogPolicy } from './hook-output-log-policy.js';
import { fluxHookOutputCrash } from './flux-hook-output-crash.js';
import { hookSyncOptions } from './hook-sync-options.js';
import { hookManagedBy } from './hook-managed-by.js';
import { suspendedHook } from './suspended-hook.js';
import { idempotentCleanup } from './idempotent-cleanup.js';
import { lostDeleteHook } from './lost-delete-hook.js';
import { immutableUpdate } from './immutable-update.js';
import { meshSidecar } from './mesh-sidecar.js';
import { minRuntime } from './min-runtime.js';
import { nativeSidecar } from './native-sidecar.js';
import { terminationMessagePolicy } from './termination-message-policy.js';
import { ttlFloor } from './ttl-floor.js';
import { versionRace } from './version-race.js';

export const builtInRules: RuleSet = ruleSet({
  // hook-ttl after delete-policy: at render time a hook the latter gives hook-succeeded needs no TTL.
  // hook-deadline after min-runtime: the deadline it adds counts the guard's wait in.
  // foreign-finalizer and native-sidecar read Argo CD's hook finalizer on the object: the first before hook-finalizer
  // removes it (the next sync adds it again), the second after (a Job without it is never updated to remove it).
  mutations: [
    deletePolicy,
    hookTtl,
    idempotentCleanup,
    lostDeleteHook,
    foreignFinalizer,
    hookFinalizer,
    nativeSidecar,
    ttlFloor,
    minRuntime,
    hookDeadline,
    hookPodRestartPolicy,
    meshSidecar,
    hookSyncOptions,
    suspendedHook,
    hookManagedBy,
    hookOutputLogPolicy,
    fluxHookOutputCrash,
    hookLabel,
    terminationMessagePolicy,
  ],
  updateJudges: [immutableUpdate],
  createValidators: [versionRace, hookPodRestartPolicyAtRender],
});

/** A rule's settings in the config: `rules.<this>` (`delete-policy` → `deletePolicy`), `enabled` among them. */
export function ruleConfigKey(id: string): string {
  return id.replace(/-([a-z])/g, (_match, letter: string) => letter.toUpperCase());
}

/**
 * The rule set without the rules switched off installation-wide. What objects may name in hookguard.io/skip, and
 * what counts as a mitigation, stay those of the full set: a chart that skips a rule switched off is still right.
 */
export function withoutRules(rules: RuleSet, off: ReadonlySet<string>): RuleSet {
  if (off.size === 0) return rules;
  const on = <T extends { id: string }>(list: readonly T[]) => list.filter((rule) => !off.has(rule.id));
  return {
    ...rules,
    mutations: on(rules.mutations),
    updateJudges: on(rules.updateJudges),
    createValidators: on(rules.createValidators),
  };
}

export interface CatalogEntry {
  id: string;
  webhook: 'mutating' | 'validating';
  operation: 'CREATE' | 'UPDATE';
  /** Where it takes effect: at admission (the webhooks), at render time (check, post-renderer, plugin), or both. */
  stages: readonly Stage[];
  doc: string;
}

/** What `hookguard rules` lists: each rule with the webhook and operation it acts on. */
export function catalogOf(rules: RuleSet): CatalogEntry[] {
  const entry =
    (webhook: CatalogEntry['webhook'], operation: CatalogEntry['operation']) =>
    (rule: { id: string; stages: readonly Stage[]; doc: string }): CatalogEntry => ({
      id: rule.id,
      webhook,
      operation,
      stages: rule.stages,
      doc: rule.doc,
    });
  return [
    ...rules.mutations.map(entry('mutating', 'CREATE')),
    ...rules.updateJudges.map(entry('mutating', 'UPDATE')),
    ...rules.createValidators.map(entry('validating', 'CREATE')),
  ];
}

/** "admission", "render time" or "admission and render time", for people. */
export function describeStages(stages: readonly Stage[]): string {
  return stages.map((stage) => (stage === 'render' ? 'render time' : stage)).join(' and ');
}
