import type { HookInfo, HookKind } from './hook.js';
import type { Advisory, KubeObject } from './types.js';

export interface DeletePolicySettings {
  /** Policy for Helm hooks without one. */
  helm: string;
  /** Policy for Helm `test` hooks without one: no hook-succeeded, so `helm test --logs` still finds the Pod. */
  helmTest: string;
  /** Policy for Argo CD hooks without one. */
  argocd: string;
}

export interface ResourceList {
  cpu: string;
  memory: string;
}

export interface RuleSettings {
  deletePolicy: DeletePolicySettings;
  idempotentCleanup: { kubectlImages: readonly string[]; minBackoffLimit: number };
  minRuntime: {
    minRuntimeSeconds: number;
    maxRuntimeSeconds: number;
    image: string;
    /** The guard runs `[...command, String(seconds)]`. */
    command: readonly string[];
    runAsUser: number;
    requests: ResourceList;
    limits: ResourceList;
  };
  ttlFloor: { minTtlSecondsAfterFinished: number };
}

export interface RuleContext {
  hook: HookInfo;
  settings: RuleSettings;
  /** Normalised Argo CD version; undefined when unknown. */
  argocdVersion: string | undefined;
  /** Advisories affecting argocdVersion that list this rule as a mitigation. */
  advisoriesFor(ruleId: string): readonly Advisory[];
}

/**
 * When a rule runs:
 * - `always`: every hook object.
 * - `argocd`: hooks applied by Argo CD whose version an advisory for this rule affects, or whose version is unknown.
 * - `argocd-known`: only when a known Argo CD version is affected (changes that would hurt a fixed version).
 */
export type RuleGate = 'always' | 'argocd' | 'argocd-known';

export interface RuleReport {
  /** What the rule changed, one line each. */
  mutations: string[];
  /** Things the user should know that the rule did not change. */
  warnings: string[];
  /** Why the rule's mitigation could not be put in place (version-race turns this into a denial). */
  unmet?: string;
}

/** A CREATE-time rule that edits a clone of the object in place. */
export interface MutationRule {
  id: string;
  doc: string;
  kinds: readonly HookKind[];
  gate: RuleGate;
  mutate(object: KubeObject, context: RuleContext): RuleReport;
}

export function report(partial: Partial<RuleReport> = {}): RuleReport {
  return {
    mutations: partial.mutations ?? [],
    warnings: partial.warnings ?? [],
    ...(partial.unmet ? { unmet: partial.unmet } : {}),
  };
}

export function gateOpen(rule: Pick<MutationRule, 'id' | 'gate'>, context: RuleContext): boolean {
  if (rule.gate === 'always') return true;
  if (!context.hook.appliedByArgo) return false;
  if (context.argocdVersion === undefined) return rule.gate === 'argocd';
  return context.advisoriesFor(rule.id).length > 0;
}
