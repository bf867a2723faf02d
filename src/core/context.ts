// What a decision is made with: the config the core reads, the rules it is handed, the advisories and the Argo CD
// instances known at the moment. Built once from the config; a discovery snapshot makes a new one.
import type { ArgoInstances, RemoteArgo } from './argocd-instances.js';
import { advisoryAffects, normalizeArgoVersion, versionInRange } from './argocd-version.js';
import type { HookDetection, HookInfo } from './hook.js';
import type { ClusterFacts } from './cluster.js';
import { helmControllerAdvisories, type HelmControllers } from './flux.js';
import { namespaceFacts, type NamespaceSnapshot } from './namespaces.js';
import type { RuleContext, RuleSet, RuleSettings, Stage } from './rule.js';
import type { Advisory, AdvisoryNote, Mode } from './types.js';

export interface CoreConfig {
  mode: Mode;
  excludedNamespaces: readonly string[];
  hookDetection: HookDetection;
  rules: RuleSettings;
}

export interface DecisionContext {
  /** Admission (the webhooks) or render time (`hookguard check`): rules run only at the stages they name. */
  stage: Stage;
  config: CoreConfig;
  /** The rules to apply: the core is handed them, it does not know the catalog. */
  ruleSet: RuleSet;
  advisories: readonly Advisory[];
  /** `argocd.version` from the config or a flag (any spelling): it overrides discovery. */
  pinnedArgocdVersion: string | undefined;
  /** The Argo CD instances discovery knew when the request arrived. */
  argocdInstances: ArgoInstances;
  /** The namespaces the server's watch knew when the request arrived; undefined until it has synced, and at render time. */
  namespaces: NamespaceSnapshot | undefined;
  /** What the server's API discovery knew of the cluster when the request arrived; undefined until read, and at render time. */
  cluster: ClusterFacts | undefined;
  /** Argo CDs elsewhere that apply in this cluster as a known identity (`argocd.remote`). */
  remoteArgo: readonly RemoteArgo[];
  /** The advisories about Helm (`tool: helm`), apart from the Argo CD ones above. */
  helmAdvisories: readonly Advisory[];
  /** The Helm version that runs the hooks (`helm.version`, normalised); undefined when unknown. */
  helmVersion: string | undefined;
  /** The advisories about Flux's helm-controller (`tool: helm-controller`). */
  helmControllerAdvisories: readonly Advisory[];
  /**
   * The helm-controllers that may deploy the hooks: `flux.helmControllerVersion` at render time and when pinned,
   * else what discovery found (src/core/flux.ts).
   */
  helmControllers: HelmControllers;
}

/** The decision context with what Flux discovery found of the helm-controllers. */
export function withHelmControllers(context: DecisionContext, helmControllers: HelmControllers): DecisionContext {
  return { ...context, helmControllers };
}

/**
 * The decision context with a discovery snapshot: the instances, and their controllers' service accounts
 * added to the configured controller identities, so a hook an instance in any namespace applies counts as
 * applied by Argo CD.
 */
export function withInstances(context: DecisionContext, instances: ArgoInstances): DecisionContext {
  const detection = context.config.hookDetection;
  const discovered = [...instances.values()].flatMap((instance) => instance.controllerUsernames);
  const usernames = [...new Set([...detection.argocdControllerUsernames, ...discovered])];
  return {
    ...context,
    config: { ...context.config, hookDetection: { ...detection, argocdControllerUsernames: usernames } },
    argocdInstances: instances,
  };
}

/** The decision context with a namespace watch's snapshot (undefined: not synced). */
export function withNamespaces(context: DecisionContext, namespaces: NamespaceSnapshot | undefined): DecisionContext {
  return { ...context, namespaces };
}

/** The decision context with what API discovery knows of the cluster (undefined: not read yet). */
export function withCluster(context: DecisionContext, cluster: ClusterFacts | undefined): DecisionContext {
  return { ...context, cluster };
}

/** The advisories affecting the versions a hook is judged under, per rule id that names them. */
interface JudgedAdvisories {
  /** The versions, normalised, each once. */
  versions: readonly string[];
  /** The advisories affecting any of the versions (the union), per rule that mitigates them (`mitigatedBy`). */
  byRule: Map<string, readonly Advisory[]>;
  /** The same per rule that warns about them (`warnedBy`). */
  byWarningRule: Map<string, readonly Advisory[]>;
  /** The rules an advisory mitigates for every one of the versions. */
  forEveryVersion: ReadonlySet<string>;
  /** With one version: the notes of each affecting advisory that hold for it, by advisory id (none on a union). */
  notes: Map<string, readonly AdvisoryNote[]>;
}

// Semver matching is the costliest part of a decision and its answer only changes with the advisory list or the
// versions: remember it per list (the config's, or a test's) and per spelling of the versions (a few per cluster).
const remembered = new WeakMap<readonly Advisory[], Map<string, JudgedAdvisories | undefined>>();
const MAX_VERSIONS_REMEMBERED = 64;

function byNamedRule(
  affecting: readonly Advisory[],
  ruleIdsOf: (advisory: Advisory) => readonly string[],
): Map<string, readonly Advisory[]> {
  const ruleIds = new Set(affecting.flatMap(ruleIdsOf));
  return new Map(
    [...ruleIds].map((ruleId) => [ruleId, affecting.filter((advisory) => ruleIdsOf(advisory).includes(ruleId))]),
  );
}

const mitigatingRules = (affecting: readonly Advisory[]) =>
  new Set(affecting.flatMap((advisory) => advisory.mitigatedBy));

/** Undefined when one of the versions is not a version: then the hook is judged as under an unknown version. */
function judge(advisories: readonly Advisory[], rawVersions: readonly string[]): JudgedAdvisories | undefined {
  const normalised = rawVersions.map(normalizeArgoVersion);
  if (normalised.length === 0 || normalised.includes(undefined)) return undefined;
  const versions = [...new Set(normalised as string[])];
  const affectingEach = versions.map((version) => advisories.filter((advisory) => advisoryAffects(advisory, version)));
  const affectingAny = advisories.filter((advisory) => affectingEach.some((affecting) => affecting.includes(advisory)));
  const ruleIds = mitigatingRules(affectingAny);
  const rulesOfEach = affectingEach.map(mitigatingRules);
  const forEveryVersion = new Set([...ruleIds].filter((ruleId) => rulesOfEach.every((rules) => rules.has(ruleId))));
  // A note speaks of one version: a union gets none.
  const [only] = versions;
  const notes = new Map(
    versions.length === 1 && only !== undefined
      ? affectingAny.map((advisory) => [
          advisory.id,
          advisory.notes.filter((note) => versionInRange(only, note.affected)),
        ])
      : [],
  );
  return {
    versions,
    byRule: byNamedRule(affectingAny, (advisory) => advisory.mitigatedBy),
    byWarningRule: byNamedRule(affectingAny, (advisory) => advisory.warnedBy),
    forEveryVersion,
    notes,
  };
}

function judgedFor(advisories: readonly Advisory[], rawVersions: readonly string[]): JudgedAdvisories | undefined {
  let byVersions = remembered.get(advisories);
  if (!byVersions) remembered.set(advisories, (byVersions = new Map<string, JudgedAdvisories | undefined>()));
  const key = rawVersions.join(' ');
  if (byVersions.has(key)) return byVersions.get(key);
  const judged = judge(advisories, rawVersions);
  if (byVersions.size >= MAX_VERSIONS_REMEMBERED) byVersions.clear();
  byVersions.set(key, judged);
  return judged;
}

// With the version unknown, any advisory may apply: a warning names each that warns through its rule.
const warningAdvisoriesOfAnyVersion = new WeakMap<readonly Advisory[], Map<string, readonly Advisory[]>>();

function warningAdvisoriesOf(advisories: readonly Advisory[]): Map<string, readonly Advisory[]> {
  let byRule = warningAdvisoriesOfAnyVersion.get(advisories);
  if (!byRule) warningAdvisoriesOfAnyVersion.set(advisories, (byRule = byNamedRule(advisories, (a) => a.warnedBy)));
  return byRule;
}

// Each advisory concerns either the hooks Argo CD runs in a sync phase or its PreDelete/PostDelete hooks: a hook is
// judged only with those of its own phase. Split once per list.
const byHookPhase = new WeakMap<readonly Advisory[], { sync: readonly Advisory[]; delete: readonly Advisory[] }>();

function advisoriesOfPhase(advisories: readonly Advisory[], phase: 'sync' | 'delete'): readonly Advisory[] {
  let split = byHookPhase.get(advisories);
  if (!split) {
    split = {
      sync: advisories.filter((advisory) => advisory.hooks !== 'delete'),
      delete: advisories.filter((advisory) => advisory.hooks === 'delete'),
    };
    byHookPhase.set(advisories, split);
  }
  return split[phase];
}

const NO_ADVISORIES: readonly Advisory[] = Object.freeze([]);
const NO_NOTES: readonly AdvisoryNote[] = Object.freeze([]);
const NO_VERSIONS: readonly string[] = Object.freeze([]);

/**
 * What every rule sees for one hook: the Argo CD versions only count for hooks Argo CD applies. `versions` is the
 * one version the hook is judged under, or several when more than one Argo CD may have applied it and nothing says
 * which (chooseArgoVersion's union), or undefined when unknown.
 *
 * A union is judged with every advisory that affects any of its versions, and each rule's gate decides what that
 * may do (gateOpen):
 * - A rule gated `argocd` only adds protection that costs a fixed version little (min-runtime's guard waits a few
 *   seconds; ttl-floor keeps a finished Job a minute longer): it runs when any candidate is affected, as it would
 *   for an unknown version.
 * - A rule gated `argocd-known` changes what a fixed version relies on (hook-finalizer removes the finalizer that
 *   keeps a finished hook Job from being deleted before Argo CD 3.0.0 and later has seen its result, argo-cd#21055):
 *   it runs only when every candidate is affected. A CREATE that carries that finalizer has narrowed the candidates
 *   to the Argo CDs that add it already (chooseArgoVersion).
 * - `argocdVersion` is set only when the versions are one: a denial needs a known version (version-race denies
 *   nothing on a union, as on an unknown version), and a message names no version it is not sure of.
 */
export function ruleContextFor(
  hook: HookInfo,
  context: Pick<
    DecisionContext,
    | 'stage'
    | 'config'
    | 'advisories'
    | 'namespaces'
    | 'cluster'
    | 'helmAdvisories'
    | 'helmVersion'
    | 'helmControllerAdvisories'
    | 'helmControllers'
  >,
  versions: string | readonly string[] | undefined,
  namespace: string | undefined,
): RuleContext {
  // Argo CD's delete-phase hooks: the PreDelete/PostDelete hooks (or Helm's pre-/post-delete) it applies.
  const argoDeletePhase = hook.appliedByArgo && hook.cleanup && !hook.argoSyncPhase && !hook.argoNeverApplies;
  const phase = hook.argoSyncPhase ? 'sync' : argoDeletePhase ? 'delete' : undefined;
  const phaseAdvisories = phase === undefined ? NO_ADVISORIES : advisoriesOfPhase(context.advisories, phase);
  const judged =
    hook.appliedByArgo && versions !== undefined
      ? judgedFor(phaseAdvisories, typeof versions === 'string' ? [versions] : versions)
      : undefined;
  // Mitigations are about the hooks Argo CD runs in a sync phase (gitops-engine getSyncTasks, where the hook
  // finalizer is added): a PreDelete/PostDelete hook still says its version, and only warning rules speak of it.
  const advised = hook.argoSyncPhase ? judged : undefined;
  return {
    stage: context.stage,
    hook,
    namespace: namespaceFacts(context.namespaces, namespace),
    cluster: context.cluster,
    settings: context.config.rules,
    argocdVersion: judged?.versions.length === 1 ? judged.versions[0] : undefined,
    argocdVersions: judged?.versions ?? NO_VERSIONS,
    advisoriesFor: (ruleId) => advised?.byRule.get(ruleId) ?? NO_ADVISORIES,
    affectsEveryVersion: (ruleId) => advised?.forEveryVersion.has(ruleId) ?? false,
    warningAdvisoriesFor: (ruleId) =>
      phase === undefined
        ? NO_ADVISORIES
        : ((judged !== undefined ? judged.byWarningRule : warningAdvisoriesOf(phaseAdvisories)).get(ruleId) ??
          NO_ADVISORIES),
    notesFor: (advisoryId) => judged?.notes.get(advisoryId) ?? NO_NOTES,
    helmVersion: context.helmVersion,
    helmAdvisoriesFor: (ruleId) =>
      hook.appliedByArgo ? NO_ADVISORIES : helmAdvisoriesOf(context.helmAdvisories, context.helmVersion, ruleId),
    helmControllers: context.helmControllers,
    helmControllerAdvisoriesFor: (ruleId) =>
      hook.appliedByArgo
        ? NO_ADVISORIES
        : helmControllerAdvisories(context.helmControllerAdvisories, context.helmControllers, ruleId),
  };
}

/**
 * The Helm advisories naming `ruleId` as a mitigation that affect `version`; with the version unknown, every one that
 * does (any Helm may run the hooks). Few and rarely asked (render time only): matched on each call.
 */
function helmAdvisoriesOf(
  advisories: readonly Advisory[],
  version: string | undefined,
  ruleId: string,
): readonly Advisory[] {
  if (advisories.length === 0) return NO_ADVISORIES;
  return advisories.filter(
    (advisory) =>
      advisory.mitigatedBy.includes(ruleId) && (version === undefined || advisoryAffects(advisory, version)),
  );
}
