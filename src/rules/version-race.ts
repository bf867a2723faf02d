import { HOOKGUARD_SKIP } from '../core/annotations.js';
import { cloneForRules, objectLabel, jsonEqual } from '../core/objects.js';
import type { CreateValidator, MutationRule, RuleContext } from '../core/rule.js';
import type { Advisory, Finding, KubeObject } from '../core/types.js';

export const VERSION_RACE_ID = 'version-race';

/**
 * Why a mitigation is not in place. `unmet`: a setting of the object no mitigation can fix (a runtime of 0,
 * a look-alike guard); `optedOut`: the object names the rule in hookguard.io/skip. Both are the author's choice, and denied.
 * `missing`: hookguard's own change is simply absent (the mutating webhook was bypassed, failed or timed out, or a
 * later webhook undid it): not the author's doing, so it is allowed with a warning.
 */
type Shortfall = { kind: 'unmet'; reason: string } | { kind: 'optedOut' } | { kind: 'missing' };

/** Judged on a copy of its own; undefined when the object already carries the mitigation. */
function shortfallOf(rule: MutationRule, object: KubeObject, context: RuleContext): Shortfall | undefined {
  const probe = cloneForRules(object);
  const outcome = rule.mutate(probe, context);
  if (outcome.unmet) return { kind: 'unmet', reason: outcome.unmet };
  if (jsonEqual(probe, object)) return undefined;
  return context.hook.skip.has(rule.id) ? { kind: 'optedOut' } : { kind: 'missing' };
}

/**
 * What each mitigating rule lacks. The usual object was mutated by hookguard already and is compliant: every rule
 * runs on one copy and none reports a change (a rule reports every change it makes: MutationRule, held on every
 * fixture by test/unit/decide-reference.test.ts). Only when one reports a change is each rule judged alone, by
 * comparison, to name the ones that would change it (none of them undoes another's change).
 */
function shortfalls(
  rules: readonly MutationRule[],
  object: KubeObject,
  context: RuleContext,
): (Shortfall | undefined)[] {
  const probe = cloneForRules(object);
  const unmet: (string | undefined)[] = [];
  let changed = false;
  for (const rule of rules) {
    const outcome = rule.mutate(probe, context);
    unmet.push(outcome.unmet);
    if (outcome.mutations.length > 0) changed = true;
  }
  if (!changed) return unmet.map((reason) => (reason ? { kind: 'unmet', reason } : undefined));
  return rules.map((rule) => shortfallOf(rule, object, context));
}

function finding(
  object: KubeObject,
  rule: MutationRule,
  shortfall: Shortfall,
  advisory: Advisory,
  argocdVersion: string,
): Finding {
  const race = `races with Argo CD ${argocdVersion} (${advisory.id}: ${advisory.summary})`;
  const fixed = advisory.fixed ? ` Fixed in Argo CD ${advisory.fixed}.` : '';
  if (shortfall.kind === 'missing') {
    return {
      rule: VERSION_RACE_ID,
      action: 'warn',
      advisory: advisory.id,
      missingMitigation: rule.id,
      message: `${objectLabel(object)} lacks ${rule.id} (was the mutating webhook bypassed?) and ${race}; allowed, since only hookguard's own change is missing.${fixed}`,
    };
  }
  // An opt-out is the author's to undo: the denial says how, beside the upgrade that ends the race.
  const reason =
    shortfall.kind === 'unmet'
      ? `${shortfall.reason}.${fixed}`
      : `opted out with ${HOOKGUARD_SKIP}. Fix: remove ${rule.id} from ${HOOKGUARD_SKIP}${advisory.fixed ? `, or upgrade to Argo CD ${advisory.fixed}, which fixed the race` : ''}.`;
  return {
    rule: VERSION_RACE_ID,
    action: 'deny',
    advisory: advisory.id,
    message: `${objectLabel(object)} ${race}: ${rule.id} ${reason}`,
  };
}

/**
 * The validating webhook's judgement of a hook CREATE as it will be stored: every rule that mitigates an advisory
 * affecting the known Argo CD version must be in effect. It denies only what the object's author chose (an opt-out,
 * or a setting no mitigation can fix); a mitigation that is merely missing is allowed, with a warning.
 */
export const versionRace: CreateValidator = {
  id: VERSION_RACE_ID,
  doc: 'Denies a sync-phase hook CREATE that still races with the known Argo CD version because of its own settings (an opted-out mitigation, or one its settings make impossible), naming the advisory; a mitigation merely missing only warns.',
  stages: ['admission', 'render'],
  validate(object, context, mutationRules) {
    const argocdVersion = context.argocdVersion;
    // Only a sync-phase hook can race: Argo CD creates PreDelete/PostDelete hooks without its hook finalizer
    // (argo-cd controller/hook.go executeHooks at v3.0.0, v3.3.0 and v3.5.1; the finalizer is added in gitops-engine
    // pkg/sync/sync_context.go getSyncTasks, to sync hooks only), so none of them is denied.
    if (!context.hook.argoSyncPhase || argocdVersion === undefined) return [];
    const mitigating = mutationRules.filter(
      (rule) => rule.kinds.includes(context.hook.kind) && context.advisoriesFor(rule.id).length > 0,
    );
    if (mitigating.length === 0) return [];
    const missing = shortfalls(mitigating, object, context);
    const findings: Finding[] = [];
    mitigating.forEach((rule, index) => {
      const shortfall = missing[index];
      if (shortfall === undefined) return;
      for (const advisory of context.advisoriesFor(rule.id)) {
        findings.push(finding(object, rule, shortfall, advisory, argocdVersion));
      }
    });
    return findings;
  },
};
