import type { HookInfo } from '../core/hook.js';
import { jobSpecOf } from '../core/objects.js';
import { report, type MutationRule } from '../core/rule.js';

/**
 * A hook Job deleted by its TTL before the tool waiting on it has seen it finish leaves that tool waiting.
 *
 * - Argo CD sync-phase hooks: on versions without the hook finalizer the sync waits forever (argo-cd#21055,
 *   gitops-engine#646), and on versions with it a fast Job races (argo-cd#23226); gated on the advisories, like every
 *   Argo CD mitigation.
 * - Argo CD PreDelete/PostDelete hooks, at every version, as Helm's hooks: the application controller creates each
 *   expected hook missing from its live objects again (argo-cd controller/hook.go executeHooks, v3.0.0, v3.3.0,
 *   v3.5.1), so one deleted by its TTL before the controller saw it healthy runs once more. No advisory concerns
 *   them (they get no hook finalizer), so version-race never denies one.
 * - Helm 4: hooks are awaited with a kstatus watcher that wants the Job `Current`; a Job that is gone is `NotFound`,
 *   which never counts as done, so `helm install|upgrade` waits until `--timeout` and fails (helm v4.3.2
 *   `pkg/kube/statuswait.go` statusObserver, as in v4.1.4 and v4.2.4; issue helm#31786, open fix PRs helm#31851 and
 *   helm#32586): the advisory helm-hook-ttl-wait, which the finding names. Every Helm hook gets the floor, whichever
 *   version runs it: Helm 3 ends a hook's wait successfully on a Deleted event (helm v3.21.4 `pkg/kube/client.go`
 *   watchUntilReady: `case watch.Deleted: ... return true`), so there the floor costs nothing and helps little, and
 *   the finding names no advisory. (Helm 3's "jobs.batch not found" with `--wait-for-jobs`, helm#10576, concerns a
 *   chart's non-hook Jobs, which are no hooks and which hookguard leaves alone.)
 */
export const ttlFloor: MutationRule = {
  id: 'ttl-floor',
  doc: 'Raises ttlSecondsAfterFinished below the floor (default 60) on hook Jobs (Helm and Argo CD delete-phase hooks: always; Argo CD sync hooks: on an affected or unknown version), so the Job outlives the tool observing it.',
  stages: ['admission', 'render'],
  kinds: ['Job'],
  gate: 'helm-and-argocd',
  mutate(object, { hook, settings, helmAdvisoriesFor }) {
    const spec = jobSpecOf(object);
    const ttl = spec?.ttlSecondsAfterFinished;
    const floor = settings.ttlFloor.minTtlSecondsAfterFinished;
    if (!spec || typeof ttl !== 'number' || ttl >= floor) return report();
    spec.ttlSecondsAfterFinished = floor;
    // An Argo CD sync hook's findings name the Argo CD advisory its gate opened on; a Helm hook's, the Helm one
    // (helm-hook-ttl-wait) when it affects the Helm that runs it.
    const [helmAdvisory] = helmAdvisoriesFor(ttlFloor.id);
    return report({
      mutations: [`raised spec.ttlSecondsAfterFinished from ${ttl} to ${floor}: ${whyFloor(hook)}`],
      ...(helmAdvisory ? { advisory: helmAdvisory.id } : {}),
    });
  },
};

/** Why a Job deleted too soon hurts the tool that runs this hook, in one clause. */
function whyFloor(hook: HookInfo): string {
  if (!hook.appliedByArgo) return 'Helm 4 waits until --timeout for a hook Job deleted before it saw the Job finish';
  if (hook.argoSyncPhase) return 'a hook Job deleted before Argo CD saw it finish can leave the sync waiting';
  return 'Argo CD runs a delete hook again when it is gone before Argo CD saw it finish';
}
