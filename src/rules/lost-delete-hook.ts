import { report, type MutationRule } from '../core/rule.js';

export const LOST_DELETE_HOOK_ID = 'lost-delete-hook';

/**
 * From argo-cd v3.4.0 (v3.4.0-rc5; #26724 via #27257, 67d12ebb) `controller/hook.go` `executeHooks` takes an
 * `AlreadyExists` answer to its create as "skipping", and, having created nothing, judges only the hooks its cache
 * holds (`runningHooks`, from the live objects): a PreDelete/PostDelete hook the API server has and a stale cache
 * lacks counts as done at once, so the deletion goes on and the hook may be deleted before it ever ran
 * (argo-cd#29100, open; fix PRs #29126, #29687). Read at v3.4.0, v3.4.7 and v3.5.1; absent from every v3.3.x.
 * Nothing on the hook decides it, so this rule only warns, on Argo CD's delete-phase hooks at the versions an
 * advisory naming it (`warnedBy`) affects, or at an unknown version (its gate, `argocd-delete`).
 */
export const lostDeleteHook: MutationRule = {
  id: LOST_DELETE_HOOK_ID,
  doc: 'Warns about Argo CD PreDelete/PostDelete hooks on a version where a stale cache makes Argo CD take such a hook as done before it ran (argo-cd#29100); changes nothing.',
  stages: ['admission', 'render'],
  kinds: ['Job', 'Pod'],
  gate: 'argocd-delete',
  mutate() {
    return report({
      warnings: [
        'argo-cd#29100: Argo CD may take this delete hook as done before it runs, and delete it; check that it ran',
      ],
    });
  },
};
