import { ARGOCD_HOOK_FINALIZER, HOOKGUARD_SKIP } from './annotations.js';
import { chooseArgoVersion, judgedVersions, type VersionChoice } from './argocd-instances.js';
import { ruleContextFor, type DecisionContext } from './context.js';
import { hookNaming, readHook, type HookInfo, type HookKind } from './hook.js';
import { compare } from './json-patch.js';
import { cloneForRules, finalizersOf, isRecord, metadataOf } from './objects.js';
import { gateOpen, type MutationRule, type RuleContext, type RuleSet, type Stage } from './rule.js';
import type { AdmissionRequest, Endpoint, Finding, KubeObject, Mode, Operation } from './types.js';
import { renderWarnings } from './warnings.js';

export interface Decision {
  allowed: boolean;
  mode: Mode;
  /** The JSON Patch to send: empty when nothing changed, and always in audit mode. */
  patch: Operation[];
  /** What audit mode computed and did not send. */
  withheldPatch: Operation[];
  warnings: string[];
  findings: Finding[];
  /** Why the request is denied, for the AdmissionReview status. */
  denial?: string;
  /** One phrase for the audit log: why the decision is what it is. */
  reason: string;
  /** Rules that ran (were in scope for this object). */
  rules: string[];
  hook?: Pick<HookInfo, 'system' | 'phases' | 'appliedByArgo'>;
  argocdVersion?: string;
  /**
   * For hooks Argo CD applies: how the version was chosen, and which instance or remote identity it belongs to; for a
   * union, every candidate with its version.
   */
  argocdVersionFrom?: Omit<VersionChoice, 'version'>;
  /** What the hook object opted out of, whether or not anything else would have been done: only set when it did. */
  optOuts?: OptOuts;
}

/**
 * A hook's own opt-outs: the known rules it names in hookguard.io/skip (unknown ones become a warning finding), and
 * hookguard.io/mode: audit. The audit line and a metric show them on every decision, at every Argo CD version, the
 * unknown one included, where no advisory makes version-race deny them.
 */
export interface OptOuts {
  skip: string[];
  auditMode: boolean;
}

/** The patch hookguard computed, whether it was sent (enforce) or withheld (audit): at most one of the two is set. */
export function computedPatch(decision: Pick<Decision, 'patch' | 'withheldPatch'>): Operation[] {
  return decision.patch.length > 0 ? decision.patch : decision.withheldPatch;
}

function passThrough(reason: string, mode: Mode): Decision {
  return { allowed: true, mode, patch: [], withheldPatch: [], warnings: [], findings: [], reason, rules: [] };
}

/**
 * A pass-through with a fixed reason, made once per mode and frozen with its lists: most objects the webhooks see are
 * no hooks, and their path allocates nothing.
 */
function fixedPassThrough(reason: string): Readonly<Record<Mode, Decision>> {
  const frozen = (mode: Mode): Decision => {
    const decision = passThrough(reason, mode);
    for (const list of [decision.patch, decision.withheldPatch, decision.warnings, decision.findings, decision.rules])
      Object.freeze(list);
    return Object.freeze(decision);
  };
  return { enforce: frozen('enforce'), audit: frozen('audit') };
}

const NOT_A_HOOK = fixedPassThrough('not a hook object');
const NAMESPACE_EXCLUDED = fixedPassThrough('namespace excluded');

interface Mutation {
  mutated: KubeObject;
  /** Whether a rule reported a change (RuleReport.mutations): if none did, the copy is the object as received. */
  changed: boolean;
  findings: Finding[];
  rules: string[];
}

function applyMutations(object: KubeObject, context: RuleContext, ruleSet: RuleSet): Mutation {
  const mutated = cloneForRules(object);
  const findings: Finding[] = [];
  const rules: string[] = [];
  let changed = false;
  for (const rule of mutationsFor(ruleSet, context.stage, context.hook.kind)) {
    if (!gateOpen(rule, context) || context.hook.skip.has(rule.id)) continue;
    rules.push(rule.id);
    const outcome = rule.mutate(mutated, context);
    // Most rules report nothing about most objects: their advisory is looked up only for a finding.
    if (outcome.mutations.length === 0 && outcome.warnings.length === 0 && !outcome.unmet) continue;
    if (outcome.mutations.length > 0) changed = true;
    const advisory = outcome.advisory ?? context.advisoriesFor(rule.id)[0]?.id;
    for (const message of outcome.mutations) findings.push(ruleFinding(rule.id, 'mutate', message, advisory));
    if (outcome.warnings.length > 0) {
      // A warning rule's warnings are about the advisory it warns of; another rule's are about the object alone.
      const warnedOf = (context.warningAdvisoriesFor(rule.id)[0] ?? context.helmControllerAdvisoriesFor(rule.id)[0])
        ?.id;
      for (const message of outcome.warnings) findings.push(ruleFinding(rule.id, 'warn', message, warnedOf));
    }
    if (outcome.unmet) findings.push(ruleFinding(rule.id, 'warn', outcome.unmet, advisory));
  }
  return { mutated, changed, findings, rules };
}

// The mutations that take effect at each stage on each kind, in the rule set's order: listed once per rule set.
const mutationsByStageAndKind = new WeakMap<RuleSet, Record<Stage, Record<HookKind, readonly MutationRule[]>>>();

function mutationsFor(ruleSet: RuleSet, stage: Stage, kind: HookKind): readonly MutationRule[] {
  let lists = mutationsByStageAndKind.get(ruleSet);
  if (!lists) {
    const taking = (at: Stage, of: HookKind) =>
      ruleSet.mutations.filter((rule) => rule.stages.includes(at) && rule.kinds.includes(of));
    const byKind = (at: Stage) => ({ Job: taking(at, 'Job'), Pod: taking(at, 'Pod'), Other: taking(at, 'Other') });
    lists = { admission: byKind('admission'), render: byKind('render') };
    mutationsByStageAndKind.set(ruleSet, lists);
  }
  return lists[stage][kind];
}

/** A rule's finding, naming the advisory it concerns when there is one (no key otherwise). */
function ruleFinding(rule: string, action: 'mutate' | 'warn', message: string, advisory: string | undefined): Finding {
  return advisory ? { rule, action, message, advisory } : { rule, action, message };
}

function optOutsOf(hook: HookInfo, ruleSet: RuleSet): OptOuts | undefined {
  const skip = hook.skip.size === 0 ? [] : [...hook.skip].filter((id) => ruleSet.skippableIds.has(id));
  if (skip.length === 0 && !hook.auditOnly) return undefined;
  return { skip, auditMode: hook.auditOnly };
}

function unknownSkipFindings(hook: HookInfo, ruleSet: RuleSet): Finding[] {
  const unknown = [...hook.skip].filter((id) => !ruleSet.skippableIds.has(id));
  if (unknown.length === 0) return [];
  return [{ rule: 'skip', action: 'warn', message: `${HOOKGUARD_SKIP} names unknown rules: ${unknown.join(', ')}` }];
}

interface Judged {
  mode: Mode;
  /** The object as received: what the notes read (the hook's naming). */
  object: KubeObject;
  hook: HookInfo;
  context: RuleContext;
  versionChoice: VersionChoice | undefined;
  optOuts: OptOuts | undefined;
}

/** Each finding that names an advisory gets the advisory's note for this version and this hook's naming, if any. */
function withNotes(findings: Finding[], object: KubeObject, context: RuleContext): Finding[] {
  if (!findings.some((finding) => finding.advisory !== undefined)) return findings;
  const naming = hookNaming(object);
  return findings.map((finding) => {
    if (finding.advisory === undefined || finding.note !== undefined) return finding;
    const note = context
      .notesFor(finding.advisory)
      .find((candidate) => candidate.hookName === undefined || candidate.hookName === naming);
    return note ? { ...finding, note: note.text } : finding;
  });
}

function conclude(
  { mode, object, hook, context, versionChoice, optOuts }: Judged,
  rules: string[],
  judgedFindings: Finding[],
  patch: Operation[],
): Decision {
  const findings = withNotes(judgedFindings, object, context);
  const denials = findings.filter((finding) => finding.action === 'deny');
  const enforce = mode === 'enforce';
  const denied = enforce && denials.length > 0;
  const decision: Decision = {
    allowed: !denied,
    mode,
    patch: enforce && !denied ? patch : [],
    withheldPatch: enforce && !denied ? [] : patch,
    warnings: renderWarnings(findings, mode),
    findings,
    reason: denied
      ? 'denied'
      : denials.length > 0
        ? 'would deny (audit)'
        : patch.length > 0
          ? enforce
            ? 'mutated'
            : 'would mutate (audit)'
          : findings.some((finding) => finding.missingMitigation !== undefined)
            ? 'mitigation missing, allowed'
            : 'compliant',
    rules,
    hook: { system: hook.system, phases: hook.phases, appliedByArgo: hook.appliedByArgo },
  };
  // The optional keys are set only when they have a value (no key at all otherwise): assigned, since spreading a
  // conditional object literal costs more on every hook request.
  if (denied) decision.denial = `hookguard denied: ${denials.map((finding) => finding.message).join(' | ')}`;
  if (context.argocdVersion) decision.argocdVersion = context.argocdVersion;
  if (versionChoice) decision.argocdVersionFrom = versionFrom(versionChoice);
  if (optOuts) decision.optOuts = optOuts;
  return decision;
}

function versionFrom(choice: VersionChoice): Omit<VersionChoice, 'version'> {
  const from: Omit<VersionChoice, 'version'> = { by: choice.by };
  if (choice.instance !== undefined) from.instance = choice.instance;
  if (choice.remote !== undefined) from.remote = choice.remote;
  if (choice.candidates !== undefined) from.candidates = choice.candidates;
  return from;
}

/**
 * The whole admission decision, pure: the HTTP layer decodes, calls this, and encodes. Anything that is not a
 * CREATE or UPDATE of a hook Job or Pod passes on a fast path, without a clone or a diff.
 */
/** Why render time under Argo CD leaves a Helm test or rollback hook as written (gitops-engine pkg/sync/hook/helm/type.go). */
export const ARGO_NEVER_APPLIES = 'a Helm hook type Argo CD never applies';

export function decide(request: AdmissionRequest, endpoint: Endpoint, context: DecisionContext): Decision {
  const { config, ruleSet } = context;
  const operation = request.operation;
  if (operation !== 'CREATE' && operation !== 'UPDATE')
    return passThrough(`operation ${String(operation)}`, config.mode);
  if (request.subResource) return passThrough(`subresource ${request.subResource}`, config.mode);
  const object = request.object;
  const hook = readHook(object, request.userInfo?.username, config.hookDetection);
  if (!hook || !isRecord(object)) return NOT_A_HOOK[config.mode];
  // A hook of another kind matters only for what the tools read from the rendered manifest (its delete policy): at
  // admission, Jobs and Pods are the hooks.
  if (hook.kind === 'Other' && context.stage !== 'render') return NOT_A_HOOK[config.mode];
  // Argo CD never applies a Helm test or rollback hook: at render time under Argo CD it is left as written.
  if (hook.argoNeverApplies && context.stage === 'render') return passThrough(ARGO_NEVER_APPLIES, config.mode);
  const namespace = request.namespace ?? metadataOf(object)?.namespace;
  if (namespace !== undefined && config.excludedNamespaces.includes(namespace)) {
    return NAMESPACE_EXCLUDED[config.mode];
  }

  const versionChoice = hook.appliedByArgo
    ? chooseArgoVersion({
        username: request.userInfo?.username,
        object,
        pinned: context.pinnedArgocdVersion,
        instances: context.argocdInstances,
        remote: context.remoteArgo,
        trackingLabel: config.hookDetection.argocdTrackingLabel,
        carriesHookFinalizer:
          context.stage === 'admission' &&
          operation === 'CREATE' &&
          finalizersOf(object).includes(ARGOCD_HOOK_FINALIZER),
      })
    : undefined;
  const ruleContext = ruleContextFor(hook, context, judgedVersions(versionChoice), namespace);
  const judged: Judged = {
    mode: hook.auditOnly ? 'audit' : config.mode,
    object,
    hook,
    context: ruleContext,
    versionChoice,
    optOuts: optOutsOf(hook, ruleSet),
  };

  if (operation === 'UPDATE') {
    const oldObject = request.oldObject;
    if (endpoint === 'validate' || !isRecord(oldObject)) return conclude(judged, [], [], []);
    const judges = atStage(ruleSet.updateJudges, ruleContext);
    const findings: Finding[] = [];
    for (const judge of judges) {
      const finding = judge.judge(oldObject, object, ruleContext);
      if (finding) findings.push(finding);
    }
    return conclude(judged, ids(judges), findings, []);
  }

  if (endpoint === 'mutate') {
    const mutation = applyMutations(object, ruleContext, ruleSet);
    const patch = mutation.changed ? compare(object, mutation.mutated) : [];
    // Said once per object, here rather than also at /validate.
    return conclude(judged, mutation.rules, [...unknownSkipFindings(hook, ruleSet), ...mutation.findings], patch);
  }
  // In audit mode nothing was mutated before us: judge what enforce mode would have stored.
  const stored = judged.mode === 'audit' ? applyMutations(object, ruleContext, ruleSet).mutated : object;
  const validators = atStage(ruleSet.createValidators, ruleContext);
  const findings: Finding[] = [];
  const ran: string[] = [];
  for (const validator of validators) {
    // A validator that shares its id with a mutation (a rule with both parts) is opted out of with it.
    if (hook.skip.has(validator.id) && ruleSet.skippableIds.has(validator.id)) continue;
    ran.push(validator.id);
    findings.push(...validator.validate(stored, ruleContext, atStage(ruleSet.mutations, ruleContext)));
  }
  return conclude(judged, ran, findings, []);
}

function atStage<T extends { stages: readonly Stage[] }>(rules: readonly T[], context: RuleContext): readonly T[] {
  return rules.every((rule) => rule.stages.includes(context.stage))
    ? rules
    : rules.filter((rule) => rule.stages.includes(context.stage));
}

function ids(rules: readonly { id: string }[]): string[] {
  return rules.map((rule) => rule.id);
}
