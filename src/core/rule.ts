import type { HookInfo, HookKind } from './hook.js';
import type { ClusterFacts } from './cluster.js';
import type { HelmControllers } from './flux.js';
import type { NamespaceFacts } from './namespaces.js';
import type { Advisory, AdvisoryNote, Finding, KubeObject } from './types.js';

export interface DeletePolicySettings {
  enabled: boolean;
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

/**
 * Each rule's settings, `rules.<rule>` in the config. `enabled: false` switches the rule off installation-wide: the
 * config leaves it out of the rule set (src/config/decision-context.ts), so no rule reads its own.
 */
export interface RuleSettings {
  deletePolicy: DeletePolicySettings;
  idempotentCleanup: { enabled: boolean; kubectlImages: readonly string[]; minBackoffLimit: number };
  foreignFinalizer: { enabled: boolean };
  hookFinalizer: { enabled: boolean };
  nativeSidecar: { enabled: boolean };
  minRuntime: {
    enabled: boolean;
    minRuntimeSeconds: number;
    maxRuntimeSeconds: number;
    image: string;
    /** The guard runs `[...command, String(seconds)]`. */
    command: readonly string[];
    /** The guard's user and group where the Pod sets none; null leaves them to the image or the platform. */
    runAsUser: number | null;
    /** The image's USER is a numeric non-root uid, which the kubelet verifies as non-root. */
    imageRunsAsNonRoot: boolean;
    /** Whether the cluster is OpenShift (its SCCs assign user ids): `auto` takes what the server discovered. */
    openshift: 'auto' | 'true' | 'false';
    /** Upper bounds of the guard's requests and limits (it follows the Pod's containers below them). */
    requests: ResourceList;
    limits: ResourceList;
  };
  ttlFloor: { enabled: boolean; minTtlSecondsAfterFinished: number };
  hookTtl: { enabled: boolean; ttlSecondsAfterFinished: number };
  hookDeadline: {
    enabled: boolean;
    /** 0 (the default): no deadline is set, only named as missing. */
    activeDeadlineSeconds: number;
    /** Whether a deadline is also set on Jobs with completions or parallelism above 1. */
    parallelJobs: boolean;
    /** Whether a hook without a deadline gets a warning. */
    warn: boolean;
  };
  hookPodRestartPolicy: { enabled: boolean };
  meshSidecar: {
    enabled: boolean;
    action: 'off' | 'warn' | 'exclude';
    /** Whether the cluster's meshes inject native sidecars when a pod does not say. */
    nativeSidecars: 'unknown' | 'yes' | 'no';
  };
  hookSyncOptions: { enabled: boolean };
  suspendedHook: { enabled: boolean };
  lostDeleteHook: { enabled: boolean };
  hookManagedBy: { enabled: boolean };
  hookOutputLogPolicy: { enabled: boolean };
  fluxHookOutputCrash: { enabled: boolean };
  hookLabel: { enabled: boolean };
  terminationMessagePolicy: { enabled: boolean };
  immutableUpdate: { enabled: boolean };
  versionRace: { enabled: boolean };
}

/**
 * Where a decision is made. `admission`: the object the API server is about to store, after its defaulting (the
 * webhooks). `render`: the manifest as its author wrote it, before Helm or Argo CD applies it (`hookguard check`,
 * the Helm post-renderer, the Argo CD plugin); only there do the fields the tools read from the manifest (delete
 * policies) take effect, and only there is a field the author left unset still unset.
 */
export type Stage = 'admission' | 'render';

export interface RuleContext {
  stage: Stage;
  hook: HookInfo;
  /**
   * What the server's namespace watch knows of the object's namespace (its mesh injection labels and annotations);
   * undefined when nothing is known: at render time, or before the watch has synced.
   */
  namespace: NamespaceFacts | undefined;
  /** What the server's API discovery knows of the cluster (OpenShift or not); undefined at render time and until read. */
  cluster: ClusterFacts | undefined;
  settings: RuleSettings;
  /**
   * The normalised Argo CD version the hook is judged under; undefined when it is unknown, and when several Argo CDs
   * of different versions may have applied the hook (a union: see argocdVersions). A denial needs it.
   */
  argocdVersion: string | undefined;
  /** Every version the hook is judged under: argocdVersion alone, the versions of a union, or none when unknown. */
  argocdVersions: readonly string[];
  /** Advisories affecting any of argocdVersions that list this rule as a mitigation. */
  advisoriesFor(ruleId: string): readonly Advisory[];
  /** Whether every one of argocdVersions is affected by an advisory this rule mitigates (false when there are none). */
  affectsEveryVersion(ruleId: string): boolean;
  /**
   * Advisories affecting argocdVersions that list this rule as the one that warns about them; with the version
   * unknown, every advisory that does (any of them may apply).
   */
  warningAdvisoriesFor(ruleId: string): readonly Advisory[];
  /** The notes of an advisory affecting argocdVersion that hold for that version (none on a union). */
  notesFor(advisoryId: string): readonly AdvisoryNote[];
  /** The Helm version that runs the hooks (render time: what the post-renderer plugin says); undefined when unknown. */
  helmVersion: string | undefined;
  /**
   * For a hook Helm runs (not one Argo CD applies): the Helm advisories naming this rule as a mitigation that affect
   * helmVersion, or with it unknown every one that does.
   */
  helmAdvisoriesFor(this: void, ruleId: string): readonly Advisory[];
  /** The helm-controllers that may deploy the hook (src/core/flux.ts). */
  helmControllers: HelmControllers;
  /**
   * For a hook Helm runs (not one Argo CD applies): the helm-controller advisories naming this rule in `warnedBy`
   * that affect a known helm-controller, or every one when a helm-controller's version is unknown.
   */
  helmControllerAdvisoriesFor(this: void, ruleId: string): readonly Advisory[];
}

/**
 * When a rule runs:
 * - `always`: every hook object.
 * - `argocd`: hooks applied by Argo CD whose version an advisory naming this rule (as a mitigation or a warning)
 *   affects, or whose version is unknown; under a union of versions, when any of them is affected (protection that
 *   costs a fixed version little).
 * - `argocd-known`: only when a known Argo CD version is affected (changes that would hurt a fixed version); under a
 *   union, only when every one of its versions is.
 * - `helm-and-argocd`: every hook Helm applies, and hooks applied by Argo CD as under `argocd`.
 * - `argocd-delete`: Argo CD's PreDelete/PostDelete hooks, on a version an advisory about delete hooks (`hooks:
 *   delete`) naming this rule as a warning affects, or an unknown version.
 * - `helm-controller`: hooks Helm runs while a Flux helm-controller an advisory naming this rule (`warnedBy`) affects
 *   is known, or one of unknown version runs.
 * The Argo CD gates concern only the hooks Argo CD runs in a sync phase (HookInfo.argoSyncPhase); its delete-phase
 * hooks pass the gates as Helm's hooks do.
 */
export type RuleGate = 'always' | 'argocd' | 'argocd-known' | 'helm-and-argocd' | 'argocd-delete' | 'helm-controller';

export interface RuleReport {
  /**
   * What the rule changed, one line each: a rule that changes the object says so here, every time (decide() and
   * version-race take a report without one as "unchanged", and diff nothing).
   */
  mutations: string[];
  /** Things the user should know that the rule did not change. */
  warnings: string[];
  /** Why the rule's mitigation could not be put in place (version-race turns this into a denial). */
  unmet?: string;
  /**
   * The advisory the changes answer, when the rule itself chose to answer one (a Helm advisory, from
   * helmAdvisoriesFor: no gate opens on those). Otherwise the findings name the first Argo CD advisory the rule
   * mitigates for this hook (advisoriesFor), as its gate opened on it.
   */
  advisory?: string;
}

/**
 * A CREATE-time rule that edits a copy of the object in place (the mutating webhook). The copy (cloneForRules) is
 * its own only down to the containers: a rule may set or delete keys of the object, its metadata and the pod
 * template's (and their annotations and labels), the Job spec, the template, the pod spec, its container lists and
 * each container; anything deeper is shared with the request, and is replaced, never written into.
 */
export interface MutationRule {
  id: string;
  doc: string;
  /** Where the rule takes effect: it runs only at these stages. */
  stages: readonly Stage[];
  kinds: readonly HookKind[];
  gate: RuleGate;
  mutate(object: KubeObject, context: RuleContext): RuleReport;
}

/** An UPDATE-time rule: judges the change from the stored object to the new one (the mutating webhook). */
export interface UpdateJudge {
  id: string;
  doc: string;
  stages: readonly Stage[];
  judge(oldObject: KubeObject, newObject: KubeObject, context: RuleContext): Finding | undefined;
}

/** A CREATE-time rule of the validating webhook: judges the object as it will be stored, after every mutation. */
export interface CreateValidator {
  id: string;
  doc: string;
  stages: readonly Stage[];
  /** `mutations` are the rule set's, for validators that judge whether a mitigation is in place. */
  validate(object: KubeObject, context: RuleContext, mutations: readonly MutationRule[]): Finding[];
}

/**
 * The rules the core applies, handed to it in the DecisionContext: the core knows their shapes, never their
 * catalog. Built once, where the config is built.
 */
export interface RuleSet {
  /** CREATE mutations, in the order they run. */
  mutations: readonly MutationRule[];
  /** UPDATE judges; the first finding of each is kept. */
  updateJudges: readonly UpdateJudge[];
  createValidators: readonly CreateValidator[];
  /**
   * Ids an object may opt out of with hookguard.io/skip: the mutations, and with them a validator of the same id (a
   * rule with both parts). Judges, and validators of their own, cannot be skipped.
   */
  skippableIds: ReadonlySet<string>;
  /** Ids an advisory may name as its mitigation: the mutations and the UPDATE judges. */
  mitigatingIds: ReadonlySet<string>;
}

export function ruleSet(rules: Pick<RuleSet, 'mutations' | 'updateJudges' | 'createValidators'>): RuleSet {
  const skippableIds = new Set(rules.mutations.map((rule) => rule.id));
  return {
    ...rules,
    skippableIds,
    mitigatingIds: new Set([...skippableIds, ...rules.updateJudges.map((judge) => judge.id)]),
  };
}

/**
 * What a rule that changed nothing and has nothing to say reports: one frozen report for all, as most rules say
 * nothing about most objects and their path should allocate nothing.
 */
const NOTHING: RuleReport = Object.freeze({
  mutations: Object.freeze([]) as unknown as string[],
  warnings: Object.freeze([]) as unknown as string[],
});

export function report(partial?: Partial<RuleReport>): RuleReport {
  if (partial === undefined) return NOTHING;
  const outcome: RuleReport = { mutations: partial.mutations ?? [], warnings: partial.warnings ?? [] };
  // Assigned, not spread from a conditional literal: no key at all when there is nothing unmet.
  if (partial.unmet) outcome.unmet = partial.unmet;
  if (partial.advisory) outcome.advisory = partial.advisory;
  return outcome;
}

export function gateOpen(rule: Pick<MutationRule, 'id' | 'gate'>, context: RuleContext): boolean {
  if (rule.gate === 'always') return true;
  if (rule.gate === 'helm-controller') return context.helmControllerAdvisoriesFor(rule.id).length > 0;
  // Only a delete-phase hook of Argo CD's is judged with the advisories about delete hooks (ruleContextFor).
  if (rule.gate === 'argocd-delete') return context.warningAdvisoriesFor(rule.id).length > 0;
  // Argo CD's PreDelete/PostDelete hooks get no hook finalizer, so no Argo CD advisory concerns them: they are
  // judged as Helm's own hooks are (argo-cd controller/hook.go executeHooks, v3.0.0-v3.5.1: a plain create).
  if (!context.hook.argoSyncPhase) return rule.gate === 'helm-and-argocd';
  if (context.argocdVersions.length === 0) return rule.gate !== 'argocd-known';
  if (rule.gate === 'argocd-known') return context.affectsEveryVersion(rule.id);
  return context.advisoriesFor(rule.id).length > 0 || context.warningAdvisoriesFor(rule.id).length > 0;
}
