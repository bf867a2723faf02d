import { HOOKGUARD_SKIP } from '../core/annotations.js';
import { cloneJson, describeObject, jsonEqual } from '../core/objects.js';
import type { MutationRule, RuleContext } from '../core/rule.js';
import type { Finding, KubeObject } from '../core/types.js';

export const VERSION_RACE_ID = 'version-race';

/**
 * Why a mitigation is not in place, or undefined when the object already carries it: the rule is run on a probe
 * copy. `probe` is a clone of `object` to reuse; the answer says whether the rule left it equal to `object`, so a
 * compliant object (the usual case) costs one clone for all rules instead of one per rule.
 */
function missingMitigation(rule: MutationRule, object: KubeObject, probe: KubeObject, context: RuleContext): { missing?: string; probeClean: boolean } {
  const outcome = rule.mutate(probe, context);
  const probeClean = jsonEqual(probe, object);
  if (outcome.unmet) return { missing: outcome.unmet, probeClean };
  if (probeClean) return { probeClean };
  const missing = context.hook.skip.has(rule.id) ? `opted out with ${HOOKGUARD_SKIP}` : 'not applied (was the mutating webhook bypassed?)';
  return { missing, probeClean };
}

/**
 * The validating webhook's judgement of a hook CREATE as it will be stored: every rule that mitigates an advisory
 * affecting the known Argo CD version must already be in effect. Opting out of one is exactly what this judges.
 */
export const versionRace = {
  id: VERSION_RACE_ID,
  doc: 'Denies a hook CREATE that, after mutation, still races with the known Argo CD version (an opted-out or impossible mitigation), naming the advisory.',
  validate(object: KubeObject, context: RuleContext, mutationRules: readonly MutationRule[]): Finding[] {
    if (!context.hook.appliedByArgo || context.argocdVersion === undefined) return [];
    const findings: Finding[] = [];
    let probe: KubeObject | undefined;
    for (const rule of mutationRules) {
      const advisories = rule.kinds.includes(context.hook.kind) ? context.advisoriesFor(rule.id) : [];
      if (advisories.length === 0) continue;
      probe ??= cloneJson(object);
      const { missing, probeClean } = missingMitigation(rule, object, probe, context);
      if (!probeClean) probe = undefined;
      if (missing === undefined) continue;
      for (const advisory of advisories) {
        findings.push({
          rule: VERSION_RACE_ID,
          action: 'deny',
          advisory: advisory.id,
          message: `${describeObject(object)} races with Argo CD ${context.argocdVersion} (${advisory.id}: ${advisory.summary}): ${rule.id} ${missing}.${advisory.fixed ? ` Fixed in Argo CD ${advisory.fixed}.` : ''}`,
        });
      }
    }
    return findings;
  },
};
