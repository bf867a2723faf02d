import { versionInRange } from '../core/argocd-version.js';
import { annotation, setAnnotation } from '../core/objects.js';
import { report, type MutationRule } from '../core/rule.js';

const HELM_OUTPUT_LOG_POLICY = 'helm.sh/hook-output-log-policy';
/** The Helm releases that read the annotation: outputLogsByPolicy is in helm v3.18.0 and later, absent in v3.17.0. */
const READ_BY_HELM = '>=3.18.0-0';

/**
 * A failed hook says why where the person running Helm reads it. From 3.18.0 Helm reads
 * `helm.sh/hook-output-log-policy` (items trimmed and lower-cased: helm v4.1.4 `pkg/release/v1/util/manifest_sorter.go`
 * operateAnnotationValues) from the rendered manifest, and when a hook Job or Pod fails under `hook-failed` prints its
 * containers' logs (`pkg/action/hooks.go` execHook → outputLogsByPolicy: the Pods labelled `job-name=<hook>`, or the
 * Pod itself) to its log writer, stderr (`pkg/cmd/root.go` hookOutputWriter). Without it a failed hook says only
 * that it failed, and its Pods may be gone (hook-failed delete policy, TTL) before anyone reads them.
 *
 * Render time only, like delete policies: Helm reads the manifest, never the live object. A chart's value, even an
 * empty one, is kept. Not on hooks Argo CD applies (Argo CD never reads it), not on Helm `test` hooks (`helm test
 * --logs` prints their logs), and not where the Helm running the hooks is known to be older than 3.18.0.
 */
export const hookOutputLogPolicy: MutationRule = {
  id: 'hook-output-log-policy',
  doc: "Gives a Helm hook Job or Pod without helm.sh/hook-output-log-policy the policy hook-failed at render time, so Helm 3.18+ and 4 print a failed hook's logs.",
  stages: ['render'],
  kinds: ['Job', 'Pod'],
  gate: 'always',
  // rules.hookOutputLogPolicy.enabled: false leaves the rule out of the RuleSet (withoutRules(), src/rules/index.ts).
  mutate(object, { hook, helmVersion }) {
    if (hook.appliedByArgo || hook.testOnly) return report();
    if (helmVersion !== undefined && !versionInRange(helmVersion, READ_BY_HELM)) return report();
    if (annotation(object, HELM_OUTPUT_LOG_POLICY) !== undefined) return report();
    setAnnotation(object, HELM_OUTPUT_LOG_POLICY, 'hook-failed');
    return report({
      mutations: [`set ${HELM_OUTPUT_LOG_POLICY}: hook-failed: Helm prints the hook's logs if it fails`],
    });
  },
};
