import { makeKubectlDeletesIdempotent } from '../core/kubectl-delete.js';
import { containersOf, jobSpecOf, podSpecOf } from '../core/objects.js';
import { report, type MutationRule } from '../core/rule.js';

// The API server's default backoffLimit, used when a Job leaves it unset.
const DEFAULT_BACKOFF_LIMIT = 6;

export const IDEMPOTENT_CLEANUP_ID = 'idempotent-cleanup';

/**
 * A cleanup hook retried after a partial run must not fail on what it already deleted, or `helm uninstall`
 * never completes (kyverno post-delete hook): deletes become idempotent and cleanup Jobs get retries.
 *
 * Argo CD retries a failed cleanup hook without end: from v3.3.0 (#22288, 3bf3d8a2) `controller/hook.go`
 * `executeHooks` deletes each Degraded PreDelete/PostDelete hook "to allow retry" and, at the next reconcile,
 * creates it again (read at v3.3.0, v3.4.0 and v3.5.1; v3.2.x has no such deletion). A hook that always fails keeps
 * the Application in deletion forever. So on Argo CD's delete-phase hooks, at the versions the advisory naming this
 * rule (`warnedBy`) affects or an unknown one, it also says so.
 */
export const idempotentCleanup: MutationRule = {
  id: IDEMPOTENT_CLEANUP_ID,
  doc: 'Adds --ignore-not-found to kubectl delete in hook commands and scripts; gives cleanup hook Jobs a backoffLimit of at least 3.',
  stages: ['admission', 'render'],
  kinds: ['Job', 'Pod'],
  gate: 'always',
  mutate(object, context) {
    const { hook, settings } = context;
    const mutations: string[] = [];
    const podSpec = podSpecOf(object);
    for (const container of podSpec ? containersOf(podSpec) : []) {
      const rewrite = makeKubectlDeletesIdempotent(container, settings.idempotentCleanup.kubectlImages);
      if (!rewrite) continue;
      if (rewrite.command) container.command = rewrite.command;
      if (rewrite.args) container.args = rewrite.args;
      mutations.push(
        ...rewrite.changes.map(
          (change) =>
            `container ${container.name ?? '?'}: --ignore-not-found for ${change}: a retry after a partial run does not fail on what it already deleted`,
        ),
      );
    }

    const spec = jobSpecOf(object);
    const minimum = settings.idempotentCleanup.minBackoffLimit;
    if (hook.kind === 'Job' && hook.cleanup && spec) {
      const current = spec.backoffLimit;
      const effective = typeof current === 'number' ? current : DEFAULT_BACKOFF_LIMIT;
      if (effective < minimum) {
        spec.backoffLimit = minimum;
        mutations.push(
          `raised spec.backoffLimit from ${current ?? `default ${DEFAULT_BACKOFF_LIMIT}`} to ${minimum}: ` +
            `a cleanup that fails once is retried before ${hook.appliedByArgo ? "the Application's deletion" : 'helm uninstall'} fails on it`,
        );
      }
    }
    const loops = context.warningAdvisoriesFor(IDEMPOTENT_CLEANUP_ID).length > 0;
    return report({
      mutations,
      ...(loops
        ? {
            warnings: [
              'Argo CD deletes and re-creates a failed delete hook until it succeeds: one that always fails keeps the Application deleting',
            ],
          }
        : {}),
    });
  },
};
