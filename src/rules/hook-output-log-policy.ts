import { versionInRange } from '../core/argocd-version.js';
import { versionsIn } from '../core/flux.js';
import { annotation, setAnnotation } from '../core/objects.js';
import { report, type MutationRule, type RuleContext } from '../core/rule.js';

export const HELM_OUTPUT_LOG_POLICY = 'helm.sh/hook-output-log-policy';
/** The Helm releases that read the annotation: outputLogsByPolicy is in helm v3.18.0 and later, absent in v3.17.0. */
const READ_BY_HELM = '>=3.18.0-0';
/**
 * The helm-controllers that crash on it (advisory flux-helm-controller-hook-output-crash, fluxcd/helm-controller#1562):
 * v1.4.0 (helm v3.19.0, which reads the annotation) to v1.6.3, the newest tag, none of which sets Helm's
 * HookOutputFunc. The rule's own knowledge, as READ_BY_HELM is: the config may widen the advisory's range, and a
 * narrower one never makes the rule add the annotation for these (test/unit/rules/hook-output-log-policy.test.ts keeps
 * the two equal).
 */
export const CRASHING_HELM_CONTROLLERS = '>=1.4.0-0';

/**
 * The helm-controllers that crash on the annotation as a phrase (their versions, or one of unknown version), as the
 * rule `ruleId` sees them; undefined when none may.
 */
export function crashingHelmControllers(
  { helmControllers, helmControllerAdvisoriesFor }: RuleContext,
  ruleId: string,
): string | undefined {
  const advised = helmControllerAdvisoriesFor(ruleId);
  const versions = [
    ...new Set([
      ...versionsIn(helmControllers, CRASHING_HELM_CONTROLLERS),
      ...advised.flatMap((advisory) => versionsIn(helmControllers, advisory.affected)),
    ]),
  ];
  if (versions.length > 0) return `Flux helm-controller ${versions.join(', ')}`;
  return helmControllers.unknownVersion ? 'a Flux helm-controller of unknown version' : undefined;
}

// The warnings lead with the issue and the version: admission warnings are cut at 120 characters (warnings.ts).
export const CRASH_ISSUE = 'helm-controller#1562';
const CRASH = "crashes on it (SIGSEGV) when the hook's outcome matches the policy, and the release is left pending";

/**
 * A failed hook says why where the person running Helm reads it. From 3.18.0 Helm reads
 * `helm.sh/hook-output-log-policy` (items trimmed and lower-cased: helm v4.3.2 `pkg/release/v1/util/manifest_sorter.go`
 * operateAnnotationValues) from the rendered manifest, and when a hook Job or Pod fails under `hook-failed` prints its
 * containers' logs (`pkg/action/hooks.go` execHook → outputLogsByPolicy: the Pods labelled `job-name=<hook>`, or the
 * Pod itself) to its log writer, stderr (`pkg/cmd/root.go` hookOutputWriter). Without it a failed hook says only
 * that it failed, and its Pods may be gone (hook-failed delete policy, TTL) before anyone reads them.
 *
 * Render time only, like delete policies: Helm reads the manifest, never the live object. A chart's value, even an
 * empty one, is kept. Not on hooks Argo CD applies (Argo CD never reads it), not on Helm `test` hooks (`helm test
 * --logs` prints their logs), and not where the Helm running the hooks is known to be older than 3.18.0.
 *
 * Flux's helm-controller from v1.4.0 crashes on the annotation instead (CRASHING_HELM_CONTROLLERS): where
 * `flux.helmControllerVersion` (`check --flux-version`) names one, the rule adds nothing and warns, and warns of a
 * policy the chart set. At admission the rule flux-hook-output-crash warns of it.
 */
export const hookOutputLogPolicy: MutationRule = {
  id: 'hook-output-log-policy',
  doc: "Gives a Helm hook Job or Pod without helm.sh/hook-output-log-policy the policy hook-failed at render time, so Helm 3.18+ and 4 print a failed hook's logs; never for a Flux helm-controller that crashes on it (fluxcd/helm-controller#1562), which it warns of instead.",
  stages: ['render'],
  kinds: ['Job', 'Pod'],
  gate: 'always',
  // rules.hookOutputLogPolicy.enabled: false leaves the rule out of the RuleSet (withoutRules(), src/rules/index.ts).
  mutate(object, context) {
    const { hook, helmVersion } = context;
    if (hook.appliedByArgo || hook.testOnly) return report();
    const policy = annotation(object, HELM_OUTPUT_LOG_POLICY);
    const crashing = crashingHelmControllers(context, hookOutputLogPolicy.id);
    if (crashing !== undefined)
      return report({
        warnings: [
          policy === undefined
            ? `${CRASH_ISSUE}: ${HELM_OUTPUT_LOG_POLICY} not set: ${crashing} ${CRASH}`
            : `${CRASH_ISSUE}: ${HELM_OUTPUT_LOG_POLICY}: ${policy} is set, and ${crashing} ${CRASH}: remove it from the chart`,
        ],
      });
    if (helmVersion !== undefined && !versionInRange(helmVersion, READ_BY_HELM)) return report();
    if (policy !== undefined) return report();
    setAnnotation(object, HELM_OUTPUT_LOG_POLICY, 'hook-failed');
    return report({
      mutations: [`set ${HELM_OUTPUT_LOG_POLICY}: hook-failed: Helm prints the hook's logs if it fails`],
    });
  },
};
