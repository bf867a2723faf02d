// FailedCreate: who refused a Job's Pod, and what to do about it.
import type { Base, BlockedBy } from './types.js';

/**
 * The job controller's note is "Error creating: " and the API server's error (pkg/controller/controller_utils.go).
 * A quota: `pods "x" is forbidden: exceeded quota: compute, requested: …, used: …, limited: …`
 * (staging/src/k8s.io/apiserver/pkg/admission/plugin/resourcequota/controller.go). Pod Security: `… is forbidden:
 * violates PodSecurity "restricted:latest": …` (staging/src/k8s.io/pod-security-admission/admission/admission.go).
 * OpenShift: `… is forbidden: unable to validate against any security context constraint: …`
 * (openshift/apiserver-library-go pkg/securitycontextconstraints/sccadmission). A webhook:
 * `admission webhook "name" denied the request: …` (staging/src/k8s.io/apiserver/pkg/admission/plugin/webhook/errors).
 */
export function refuser(note: string): BlockedBy {
  if (note.includes('exceeded quota:') || note.includes('failed quota:')) return 'ResourceQuota';
  if (note.includes('violates PodSecurity')) return 'PodSecurity';
  if (note.includes('security context constraint')) return 'SecurityContextConstraints';
  if (/admission webhook "[^"]*" denied the request/.test(note)) return 'AdmissionWebhook';
  return 'Other';
}

export function blockedStep(base: Base, blockedBy: BlockedBy, note: string): string {
  const namespace = base.namespace ?? "the hook's namespace";
  switch (blockedBy) {
    case 'ResourceQuota': {
      const quota = /exceeded quota: ([^,\s]+)/.exec(note)?.[1];
      return `Raise ResourceQuota ${quota ?? ''} in ${namespace} or lower the hook's requests and limits.`.replace(
        '  ',
        ' ',
      );
    }
    case 'PodSecurity':
      return `Make the hook's Pod meet ${namespace}'s Pod Security level (each field is named above).`;
    case 'SecurityContextConstraints':
      return "Let the hook's service account use a fitting SCC, or drop the securityContext fields named above (runAsUser).";
    case 'AdmissionWebhook': {
      const webhook = /admission webhook "([^"]*)" denied/.exec(note)?.[1] ?? '';
      return `Webhook ${webhook} refuses the hook's Pod: change the Pod as its message asks, or ask its owners.`;
    }
    case 'Other':
      return `Fix what the job controller says above; then it creates the Pod on its next try.`;
  }
}
