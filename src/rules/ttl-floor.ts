import { jobSpecOf } from '../core/objects.js';
import { report, type MutationRule } from '../core/rule.js';

/** A Job deleted by its TTL before Argo CD records the hook's result leaves the sync waiting forever (argo-cd#21055). */
export const ttlFloor: MutationRule = {
  id: 'ttl-floor',
  doc: 'Raises ttlSecondsAfterFinished below the floor (default 60) on Argo CD-applied hook Jobs, so the Job outlives Argo CD observing it.',
  stages: ['admission', 'render'],
  kinds: ['Job'],
  gate: 'argocd',
  mutate(object, { settings }) {
    const spec = jobSpecOf(object);
    const ttl = spec?.ttlSecondsAfterFinished;
    const floor = settings.ttlFloor.minTtlSecondsAfterFinished;
    if (!spec || typeof ttl !== 'number' || ttl >= floor) return report();
    spec.ttlSecondsAfterFinished = floor;
    return report({ mutations: [`raised spec.ttlSecondsAfterFinished from ${ttl} to ${floor}`] });
  },
};
