import { HOOKGUARD_SKIP } from '../core/annotations.js';
import { describeObject } from '../core/objects.js';
import type { MutationRule, RuleContext } from '../core/rule.js';
import type { Finding, KubeObject } from '../core/types.js';
import { isDeepStrictEqual } from 'node:util';

export const VERSION_RACE_ID = 'version-race';

/** Why a mitigation is not in place, or undefined when the object already carries it. */
function missingMitigation(rule: MutationRule, object: KubeObject, context: RuleContext): string | undefined {
  const probe = structuredClone(object);
  const outcome = rule.mutate(probe, context);
  if (outcome.unmet) return outcome.unmet;
  if (isDeepStrictEqual(probe, object)) return undefined;
  return context.hook.skip.has(rule.id)
    ? `opted out with ${HOOKGUARD_SKIP}`
    : 'not applied (was the mutating webhook bypassed?)';
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
    for (const rule of mutationRules) {
      const advisories = rule.kinds.includes(context.hook.kind) ? context.advisoriesFor(rule.id) : [];
      const missing = advisories.length > 0 ? missingMitigation(rule, object, context) : undefined;
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
