import { ARGOCD_SYNC_OPTIONS } from '../core/annotations.js';
import { annotation } from '../core/objects.js';
import { report, type MutationRule } from '../core/rule.js';

const REPLACE = 'Replace=true';
const FORCE = 'Force=true';

/**
 * Argo CD reads `argocd.argoproj.io/sync-options` per resource, splitting it on commas and trimming each item
 * (gitops-engine pkg/sync/resource/annotations.go HasAnnotationOption, GetAnnotationCSVs). With `Replace=true` it
 * applies the hook with `kubectl replace` when it exists (a create when it does not), with both `replace --force`,
 * which deletes and re-creates it; `Force=true` alone is `apply --force`, which deletes and re-creates it when the
 * patch is refused as a conflict or invalid (argo-cd v3.5.1 gitops-engine/pkg/sync/sync_context.go applyObject, which
 * from 3.4.0 also reads the option from the live object; kubernetes/kubectl v0.36.3 pkg/cmd/apply/patcher.go). A
 * Job annotated Force=true,Replace=true was re-created twice in one sync (argo-cd#24005, v3.0.11; the forced replace
 * of the dry run re-creates it too, gitops-engine#623), and the Application-level
 * `syncOptions: [Replace=true]`, which hookguard cannot see but which takes the same code path, makes hooks fail with
 * "already exists" (argo-cd#13100). Hooks need neither: the delete policy BeforeHookCreation deletes the old hook
 * before each sync creates it anew.
 */
export const hookSyncOptions: MutationRule = {
  id: 'hook-sync-options',
  doc: 'Warns about hooks whose argocd.argoproj.io/sync-options holds Replace=true or Force=true: Argo CD then replaces or re-creates them, a Job twice in one sync (argo-cd#24005, #13100).',
  stages: ['admission', 'render'],
  kinds: ['Job', 'Pod'],
  gate: 'always',
  mutate(object) {
    const options = annotation(object, ARGOCD_SYNC_OPTIONS);
    if (options === undefined) return report();
    const found = options
      .split(',')
      .map((option) => option.trim())
      .filter((option) => option === REPLACE || option === FORCE);
    if (found.length === 0) return report();
    const replace = found.includes(REPLACE);
    const force = found.includes(FORCE);
    const what =
      replace && force
        ? 'deletes and re-creates this hook (replace --force), in argo-cd#24005 twice in one sync'
        : replace
          ? 'replaces this hook (kubectl replace) instead of applying it; with the Application-level option hooks fail (#13100)'
          : 'deletes and re-creates this hook when an apply is refused (apply --force)';
    return report({
      warnings: [
        `sync-options ${[replace ? REPLACE : [], force ? FORCE : []].flat().join(',')}: Argo CD ${what}. Hooks need neither: BeforeHookCreation re-creates them on each sync (argo-cd#24005, #13100)`,
      ],
    });
  },
};
