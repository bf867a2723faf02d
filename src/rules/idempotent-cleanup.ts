import { makeKubectlDeletesIdempotent } from '../core/kubectl-delete.js';
import { containersOf, jobSpecOf, podSpecOf } from '../core/objects.js';
import { report, type MutationRule } from '../core/rule.js';

// The API server's default backoffLimit, used when a Job leaves it unset.
const DEFAULT_BACKOFF_LIMIT = 6;

/**
 * A cleanup hook retried after a partial run must not fail on what it already deleted, or `helm uninstall`
 * never completes (kyverno post-delete hook): deletes become idempotent and cleanup Jobs get retries.
 */
export const idempotentCleanup: MutationRule = {
  id: 'idempotent-cleanup',
  doc: 'Adds --ignore-not-found to kubectl delete in hook commands and scripts; gives cleanup hook Jobs a backoffLimit of at least 3.',
  stages: ['admission', 'render'],
  kinds: ['Job', 'Pod'],
  gate: 'always',
  mutate(object, { hook, settings }) {
    const mutations: string[] = [];
    const podSpec = podSpecOf(object);
    for (const container of podSpec ? containersOf(podSpec) : []) {
      const rewrite = makeKubectlDeletesIdempotent(container, settings.idempotentCleanup.kubectlImages);
      if (!rewrite) continue;
      if (rewrite.command) container.command = rewrite.command;
      if (rewrite.args) container.args = rewrite.args;
      mutations.push(
        ...rewrite.changes.map((change) => `container ${container.name ?? '?'}: --ignore-not-found for ${change}`),
      );
    }

    const spec = jobSpecOf(object);
    const minimum = settings.idempotentCleanup.minBackoffLimit;
    if (hook.kind === 'Job' && hook.cleanup && spec) {
      const current = spec.backoffLimit;
      const effective = typeof current === 'number' ? current : DEFAULT_BACKOFF_LIMIT;
      if (effective < minimum) {
        spec.backoffLimit = minimum;
        mutations.push(`raised spec.backoffLimit from ${current ?? `default ${DEFAULT_BACKOFF_LIMIT}`} to ${minimum}`);
      }
    }
    return report({ mutations });
  },
};
