import { HOOKGUARD_HOOK_LABEL, HOOKGUARD_HOOK_LABEL_VALUE } from '../core/annotations.js';
import { isRecord } from '../core/objects.js';
import { report, type MutationRule } from '../core/rule.js';

/**
 * Labels each hook Job and bare hook Pod hookguard admits `hookguard.io/hook: admitted`, so the hook watcher of
 * `serve` (src/controllers/hooks/) lists and watches them with a label selector: the API server filters, and a
 * cluster of 150,000 Jobs and Pods costs the watcher only its hooks. Only the object's own labels: a Job's Pods are
 * found through the job controller's `job-name` label when the Job looks failed or stuck, so they are not watched.
 * A label changes nothing about how Kubernetes, Helm or Argo CD run the hook (neither compares a hook's labels; Argo CD
 * tracks by its own label or annotation, which this is not). At admission only. A label the object already has is
 * left as it is: any other value keeps that hook out of the watcher. Off: `rules.hookLabel.enabled: false` (the
 * watcher then sees no hook), or `hookguard.io/skip: hook-label` on one hook.
 */
export const hookLabel: MutationRule = {
  id: 'hook-label',
  doc: "Labels admitted hook Jobs and Pods hookguard.io/hook: admitted, so serve's hook watcher selects only hooks (events on failure).",
  stages: ['admission'],
  kinds: ['Job', 'Pod'],
  gate: 'always',
  mutate(object) {
    if (!isRecord(object.metadata)) object.metadata = {};
    const metadata = object.metadata;
    if (!isRecord(metadata.labels)) metadata.labels = {};
    const labels = metadata.labels;
    if (labels[HOOKGUARD_HOOK_LABEL] !== undefined) return report();
    labels[HOOKGUARD_HOOK_LABEL] = HOOKGUARD_HOOK_LABEL_VALUE;
    return report({
      mutations: [
        `set label ${HOOKGUARD_HOOK_LABEL}: ${HOOKGUARD_HOOK_LABEL_VALUE}: hookguard's hook watcher follows it`,
      ],
    });
  },
};
