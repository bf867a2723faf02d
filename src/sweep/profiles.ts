// The sweep's profiles: each handles one finalizer, on the kinds that carry it, and judges an object holding it.
import type { SweepProfileId } from '../config/keys.js';
import { ARGOCD_HOOK_FINALIZER, ARGO_WORKFLOWS_STATUS_FINALIZER } from '../core/annotations.js';
import { metadataOf } from '../core/objects.js';
import type { KubeObject } from '../core/types.js';
import {
  applicationsOf,
  judgeByApplications,
  qualifyHook,
  type ApplicationLookup,
  type ApplicationRead,
  type HookTiming,
  type Qualification,
  type SweptKind,
} from './qualify.js';
import { checkWorkflowPod, qualifyWorkflowPod } from './workflow-pod.js';

export interface JudgeContext {
  now: Date;
  hookTiming: HookTiming;
  applicationLookup: ApplicationLookup;
  argoWorkflowsGraceSeconds: number;
  /** The Workflow as it is now, null when it is gone; throws ApiCallError when it cannot be read. */
  readWorkflow(namespace: string, name: string): Promise<KubeObject | null>;
  /** The Application as it is now, null when there is none, forbidden on 403; throws ApiCallError otherwise. */
  readApplication(namespace: string, name: string): Promise<ApplicationRead['application']>;
}

export interface Profile {
  id: SweepProfileId;
  finalizer: string;
  /** The kinds whose objects carry the finalizer: only these are listed for the profile. */
  kinds: readonly SweptKind[];
  /** Judges an object, as read in full just now, that holds the finalizer. */
  judge(kind: SweptKind, object: KubeObject, context: JudgeContext): Promise<Qualification>;
}

export const PROFILES: Readonly<Record<SweepProfileId, Profile>> = {
  'argocd-hook': {
    id: 'argocd-hook',
    finalizer: ARGOCD_HOOK_FINALIZER,
    kinds: ['Job', 'Pod'],
    judge: async (kind, object, context) => {
      const alone = qualifyHook(kind, object, context.now, context.hookTiming);
      if (!alone.qualifies) return alone;
      const reads: ApplicationRead[] = [];
      for (const ref of applicationsOf(object, context.applicationLookup))
        reads.push({ ref, application: await context.readApplication(ref.namespace, ref.name) });
      return judgeByApplications(kind, object, alone, reads);
    },
  },
  'argo-workflows': {
    id: 'argo-workflows',
    finalizer: ARGO_WORKFLOWS_STATUS_FINALIZER,
    kinds: ['Pod'],
    judge: async (_kind, pod, context) => {
      const check = checkWorkflowPod(pod, context.now, context.argoWorkflowsGraceSeconds);
      if (!check.needsWorkflow) return check.verdict;
      const workflow = await context.readWorkflow(String(metadataOf(pod)?.namespace ?? ''), check.owner.name);
      return qualifyWorkflowPod(pod, workflow, context.now, context.argoWorkflowsGraceSeconds);
    },
  },
};
