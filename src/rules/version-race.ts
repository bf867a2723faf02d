import { HOOKGUARD_SKIP } from '../core/annotations.js';
import { cloneJson, describeObject, jsonEqual } from '../core/objects.js';
import type { CreateValidator, MutationRule, RuleContext } from '../core/rule.js';
import type { Finding, KubeObject } from '../core/types.js';

export const VERSION_RACE_ID = 'version-race';

/** Why a mitigation is not in place, judged on a copy of its own; undefined when the object already carries it. */
function missingMitigation(rule: MutationRule, object: KubeObject, context: RuleContext): string | undefined {
  const probe = cloneJson(object);
  const outcome = rule.mutate(probe, context);
  if (outcome.unmet) return outcome.unmet;
  if (jsonEqual(probe, object)) return undefined;
  return context.hook.skip.has(rule.id)
    ? `opted out with ${HOOKGUARD_SKIP}`
    : 'not applied (was the mutating webhook bypassed?)';
}

/**
 * What each mitigating rule lacks. The usual object was mutated by hookguard already and is compliant: every rule
 * runs on one copy and one comparison shows none changed it. Only when one would change it is each rule judged
 * alone, to name the ones that would (none of them undoes another's change).
 */
function missingMitigations(
  rules: readonly MutationRule[],
  object: KubeObject,
  context: RuleContext,
): (string | undefined)[] {
  const probe = cloneJson(object);
  const unmet = rules.map((rule) => rule.mutate(probe, context).unmet);
  if (jsonEqual(probe, object)) return unmet;
  return rules.map((rule) => missingMitigation(rule, object, context));
}

/**
 * The validating webhook's judgement of a hook CREATE as it will be stored: every rule that mitigates an advisory
 * affecting the known Argo CD version must already be in effect. Opting out of one is exactly what this judges.
 */
export const versionRace: CreateValidator = {
  id: VERSION_RACE_ID,
  doc: 'Denies a hook CREATE that, after mutation, still races with the known Argo CD version (an opted-out or impossible mitigation), naming the advisory.',
  stages: ['admission', 'render'],
  validate(object, context, mutationRules) {
    if (!context.hook.appliedByArgo || context.argocdVersion === undefined) return [];
    const mitigating = mutationRules.filter(
      (rule) => rule.kinds.includes(context.hook.kind) && context.advisoriesFor(rule.id).length > 0,
    );
    if (mitigating.length === 0) return [];
    const missing = missingMitigations(mitigating, object, context);
    const findings: Finding[] = [];
    mitigating.forEach((rule, index) => {
      if (missing[index] === undefined) return;
      for (const advisory of context.advisoriesFor(rule.id)) {
        findings.push({
          rule: VERSION_RACE_ID,
          action: 'deny',
          advisory: advisory.id,
          message: `${describeObject(object)} races with Argo CD ${context.argocdVersion} (${advisory.id}: ${advisory.summary}): ${rule.id} ${missing[index]}.${advisory.fixed ? ` Fixed in Argo CD ${advisory.fixed}.` : ''}`,
        });
      }
    });
    return findings;
  },
};
