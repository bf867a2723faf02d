// What a decision is made with: the config the core reads, the rules it is handed, the advisories and the Argo CD
// instances known at the moment. Built once from the config; a discovery snapshot makes a new one.
import type { ArgoInstances } from './argocd-instances.js';
import { advisoryAffects, normalizeArgoVersion, versionInRange } from './argocd-version.js';
import type { HookDetection, HookInfo } from './hook.js';
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

/** The advisories affecting one Argo CD version, per rule id that names them, and the version normalised. */
interface VersionAdvisories {
  argocdVersion: string | undefined;
  /** By mitigating rule id (`mitigatedBy`). */
  byRule: Map<string, readonly Advisory[]>;
  /** By warning rule id (`warnedBy`). */
  byWarningRule: Map<string, readonly Advisory[]>;
  /** The notes of each affecting advisory that hold for this version, by advisory id. */
  notes: Map<string, readonly AdvisoryNote[]>;
}

// Semver matching is the costliest part of a decision and its answer only changes with the advisory list or the
// version: remember it per list (the config's, or a test's) and per version spelling (one or a few per cluster).
const versionAdvisories = new WeakMap<readonly Advisory[], Map<string, VersionAdvisories>>();
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

function advisoriesForVersion(advisories: readonly Advisory[], rawVersion: string): VersionAdvisories {
  let byVersion = versionAdvisories.get(advisories);
  if (!byVersion) versionAdvisories.set(advisories, (byVersion = new Map<string, VersionAdvisories>()));
  let known = byVersion.get(rawVersion);
  if (!known) {
    const argocdVersion = normalizeArgoVersion(rawVersion);
    const affecting = argocdVersion ? advisories.filter((advisory) => advisoryAffects(advisory, argocdVersion)) : [];
    const notes = new Map(
      affecting.map((advisory) => [
        advisory.id,
        advisory.notes.filter((note) => versionInRange(argocdVersion as string, note.affected)),
      ]),
    );
    if (byVersion.size >= MAX_VERSIONS_REMEMBERED) byVersion.clear();
    byVersion.set(
      rawVersion,
      (known = {
        argocdVersion,
        byRule: byNamedRule(affecting, (advisory) => advisory.mitigatedBy),
        byWarningRule: byNamedRule(affecting, (advisory) => advisory.warnedBy),
        notes,
      }),
    );
  }
  return known;
}

// With the version unknown, any advisory may apply: a warning names each that warns through its rule.
const warningAdvisoriesOfAnyVersion = new WeakMap<readonly Advisory[], Map<string, readonly Advisory[]>>();

function warningAdvisoriesOf(advisories: readonly Advisory[]): Map<string, readonly Advisory[]> {
  let byRule = warningAdvisoriesOfAnyVersion.get(advisories);
  if (!byRule) warningAdvisoriesOfAnyVersion.set(advisories, (byRule = byNamedRule(advisories, (a) => a.warnedBy)));
  return byRule;
}

const NO_ADVISORIES: readonly Advisory[] = Object.freeze([]);
const NO_NOTES: readonly AdvisoryNote[] = Object.freeze([]);

/** What every rule sees for one hook: the Argo CD version only counts for hooks Argo CD applies. */
export function ruleContextFor(
  hook: HookInfo,
  context: Pick<DecisionContext, 'stage' | 'config' | 'advisories' | 'namespaces'>,
  chosenVersion: string | undefined,
  namespace: string | undefined,
): RuleContext {
  const known =
    hook.appliedByArgo && chosenVersion !== undefined
      ? advisoriesForVersion(context.advisories, chosenVersion)
      : undefined;
  return {
    stage: context.stage,
    hook,
    namespace: namespaceFacts(context.namespaces, namespace),
    settings: context.config.rules,
    argocdVersion: known?.argocdVersion,
    advisoriesFor: (ruleId) => known?.byRule.get(ruleId) ?? NO_ADVISORIES,
    warningAdvisoriesFor: (ruleId) =>
      (known?.argocdVersion !== undefined ? known.byWarningRule : warningAdvisoriesOf(context.advisories)).get(
        ruleId,
      ) ?? NO_ADVISORIES,
    notesFor: (advisoryId) => known?.notes.get(advisoryId) ?? NO_NOTES,
  };
}
