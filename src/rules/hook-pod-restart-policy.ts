import { objectLabel, podSpecOf } from '../core/objects.js';
import { report, type CreateValidator, type MutationRule } from '../core/rule.js';

const ID = 'hook-pod-restart-policy';

/**
 * A bare hook Pod with restartPolicy Always never finishes: the kubelet restarts its containers after they exit 0,
 * so its phase stays Running and never becomes Succeeded (kubelet getPhase: "All containers are terminated … if
 * spec.RestartPolicy == Always … return PodRunning"). Helm waits for Succeeded or Failed until its --timeout (helm
 * v3.21.4 pkg/kube/client.go waitForPodSuccess; v4.2.4 internal/statusreaders/pod_status_reader.go). Argo CD counts
 * an Always Pod Healthy, so the hook done, once it is Running and Ready, before its command has finished, and
 * Degraded when a restart backs off (argo-cd v3.5.1 gitops-engine/pkg/health/health_pod.go getCorev1PodHealth, read
 * by sync_context.go getOperationPhase). Never is what both tools expect of a hook; OnFailure is the author's choice
 * and left alone. A Job's template can never hold Always (batch validation refuses it), so only bare Pods are read.
 *
 * The API server fills in restartPolicy Always before any webhook sees the Pod (kubernetes/apiserver v0.36.3
 * pkg/endpoints/handlers/create.go decodes with a defaulting codec; k8s.io/kubernetes v1.34.1
 * pkg/apis/core/v1/defaults.go SetDefaults_PodSpec: `if obj.RestartPolicy == "" { obj.RestartPolicy =
 * RestartPolicyAlways }`), so at admission a missing and an explicit Always look the same: both become Never, never
 * a denial, since the author may not have chosen it. Only at render time, where the author's manifest is read, is a
 * missing restartPolicy set to Never and an explicit Always denied.
 */
export const hookPodRestartPolicy: MutationRule = {
  id: ID,
  doc: 'Sets restartPolicy Never on bare hook Pods that would restart forever: at render time when none is set, at admission when it reads Always (the API server fills Always in).',
  stages: ['admission', 'render'],
  kinds: ['Pod'],
  gate: 'always',
  mutate(object, { stage }) {
    const spec = podSpecOf(object);
    if (!spec) return report();
    const policy = spec.restartPolicy;
    if (stage === 'render' && (policy === undefined || policy === null)) {
      spec.restartPolicy = 'Never';
      return report({
        mutations: ['set spec.restartPolicy: Never (none set means Always, and a hook Pod with Always never succeeds)'],
      });
    }
    if (stage === 'admission' && policy === 'Always') {
      spec.restartPolicy = 'Never';
      return report({
        mutations: [
          'changed spec.restartPolicy from Always to Never: a hook Pod with Always never succeeds (Always is also the API default)',
        ],
      });
    }
    return report();
  },
};

/** At render time, an Always the author wrote is denied: hookguard does not override a choice it can see. */
export const hookPodRestartPolicyAtRender: CreateValidator = {
  id: ID,
  doc: 'Denies a bare hook Pod whose manifest says restartPolicy: Always (it would never reach Succeeded), at render time only, where hookguard can see that its author wrote it; at admission the API server may have filled it in.',
  stages: ['render'],
  validate(object, { hook }) {
    if (hook.kind !== 'Pod' || podSpecOf(object)?.restartPolicy !== 'Always') return [];
    return [
      {
        rule: ID,
        action: 'deny',
        message: `${objectLabel(object)}: restartPolicy Always keeps this hook from ever finishing: its containers restart after they exit, so the Pod never reaches Succeeded (Helm waits until its timeout; Argo CD counts it done once it runs, before its command ends). Set restartPolicy: Never`,
      },
    ];
  },
};
