import { ARGOCD_DELETE_POLICY, HELM_DELETE_POLICY } from '../core/annotations.js';
import { annotation, setAnnotation } from '../core/objects.js';
import { report, type MutationRule } from '../core/rule.js';

/** A hook without a delete policy gets one explicitly, in the annotation its own tool reads; a chart's choice is kept. */
export const deletePolicy: MutationRule = {
  id: 'delete-policy',
  doc: 'Gives a hook without a delete policy an explicit one (Helm: before-hook-creation,hook-succeeded; Argo CD: BeforeHookCreation,HookSucceeded).',
  stages: ['admission', 'render'],
  kinds: ['Job', 'Pod'],
  gate: 'always',
  mutate(object, { hook, settings }) {
    const key = hook.system === 'argocd' ? ARGOCD_DELETE_POLICY : HELM_DELETE_POLICY;
    if (annotation(object, key) !== undefined) return report();
    const policies = settings.deletePolicy;
    const value = hook.system === 'argocd' ? policies.argocd : hook.testOnly ? policies.helmTest : policies.helm;
    setAnnotation(object, key, value);
    return report({ mutations: [`set ${key}: ${value}`] });
  },
};
