// An Argo Workflows step pod and its Workflow as a cluster stores them, shaped after argoproj/argo-workflows v4.1.2
// (workflow/controller/workflowpod.go: labels, annotations, the controller ownerReference, restartPolicy Never, the
// `workflows.argoproj.io/status` finalizer with ARGO_POD_STATUS_CAPTURE_FINALIZER=true) and a kubelet's status.

export const WORKFLOW_FINALIZER = 'workflows.argoproj.io/status';
export const WORKFLOW_NAME = 'hello-world-x7k2p';
export const WORKFLOW_UID = '5d0c3a55-8a5e-4f3b-9d7e-2f4c1b0e9a11';
export const NODE_ID = 'hello-world-x7k2p-2841577425';
const POD_NAME = 'hello-world-x7k2p-main-2841577425';

/** Plain JSON, every field open to a test's changes. */
export type Mutable = { [key: string]: any; metadata: Record<string, any>; status: Record<string, any> };

/** The step pod of `hello-world-x7k2p`, Succeeded; `metadata` entries override or add (e.g. a deletionTimestamp). */
export function argoWorkflowPod(metadata: Record<string, unknown> = {}, namespace = 'argo'): Mutable {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: POD_NAME,
      namespace,
      uid: '0b6e51f2-77c9-4d3e-a0b4-5e1f9c2d8a70',
      resourceVersion: '918273',
      creationTimestamp: '2026-11-22T11:20:00Z',
      labels: {
        'workflows.argoproj.io/workflow': WORKFLOW_NAME,
        'workflows.argoproj.io/completed': 'false',
      },
      annotations: {
        'workflows.argoproj.io/node-id': NODE_ID,
        'workflows.argoproj.io/node-name': WORKFLOW_NAME,
        'kubectl.kubernetes.io/default-container': 'main',
      },
      finalizers: [WORKFLOW_FINALIZER],
      ownerReferences: [
        {
          apiVersion: 'argoproj.io/v1alpha1',
          kind: 'Workflow',
          name: WORKFLOW_NAME,
          uid: WORKFLOW_UID,
          controller: true,
          blockOwnerDeletion: true,
        },
      ],
      managedFields: [
        {
          manager: 'workflow-controller',
          operation: 'Update',
          apiVersion: 'v1',
          time: '2026-11-22T11:20:00Z',
          fieldsType: 'FieldsV1',
          fieldsV1: {
            'f:metadata': {
              'f:finalizers': { '.': {}, 'v:"workflows.argoproj.io/status"': {} },
              'f:labels': { '.': {}, 'f:workflows.argoproj.io/completed': {}, 'f:workflows.argoproj.io/workflow': {} },
            },
          },
        },
        {
          manager: 'kubelet',
          operation: 'Update',
          apiVersion: 'v1',
          time: '2026-11-22T11:21:04Z',
          fieldsType: 'FieldsV1',
          fieldsV1: { 'f:status': { 'f:phase': {} } },
          subresource: 'status',
        },
      ],
      ...metadata,
    },
    spec: {
      restartPolicy: 'Never',
      serviceAccountName: 'default',
      nodeName: 'worker-1',
      initContainers: [
        {
          name: 'init',
          image: 'quay.io/argoproj/argoexec:v4.1.2',
          command: ['argoexec', 'init', '--loglevel', 'info'],
          env: [{ name: 'ARGO_POD_NAME', valueFrom: { fieldRef: { apiVersion: 'v1', fieldPath: 'metadata.name' } } }],
        },
      ],
      containers: [
        {
          name: 'wait',
          image: 'quay.io/argoproj/argoexec:v4.1.2',
          command: ['argoexec', 'wait', '--loglevel', 'info'],
        },
        {
          name: 'main',
          image: 'busybox:1.37',
          command: ['/var/run/argo/argoexec', 'emissary', '--loglevel', 'info', '--', 'echo'],
          args: ['hello world'],
        },
      ],
      tolerations: [
        { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 },
      ],
    },
    status: {
      phase: 'Succeeded',
      conditions: [
        {
          type: 'Ready',
          status: 'False',
          lastProbeTime: null,
          lastTransitionTime: '2026-11-22T11:21:04Z',
          reason: 'PodCompleted',
        },
      ],
      containerStatuses: [
        {
          name: 'main',
          ready: false,
          restartCount: 0,
          image: 'docker.io/library/busybox:1.37',
          imageID: 'docker.io/library/busybox@sha256:37f7b378a29ceb4c551b1b5582e27747b855bbfaa73fa11914fe0df028dc581f',
          state: {
            terminated: {
              exitCode: 0,
              reason: 'Completed',
              startedAt: '2026-11-22T11:21:01Z',
              finishedAt: '2026-11-22T11:21:02Z',
            },
          },
        },
      ],
    },
  };
}

/** `hello-world-x7k2p`, still running the pod's node. */
export function argoWorkflow(namespace = 'argo'): Mutable {
  return {
    apiVersion: 'argoproj.io/v1alpha1',
    kind: 'Workflow',
    metadata: {
      name: WORKFLOW_NAME,
      namespace,
      uid: WORKFLOW_UID,
      resourceVersion: '918200',
      labels: { 'workflows.argoproj.io/completed': 'false', 'workflows.argoproj.io/phase': 'Running' },
    },
    spec: {
      entrypoint: 'main',
      templates: [{ name: 'main', container: { image: 'busybox:1.37', command: ['echo'] } }],
    },
    status: {
      phase: 'Running',
      startedAt: '2026-11-22T11:20:00Z',
      nodes: {
        [NODE_ID]: {
          id: NODE_ID,
          name: WORKFLOW_NAME,
          displayName: WORKFLOW_NAME,
          type: 'Pod',
          templateName: 'main',
          phase: 'Running',
          startedAt: '2026-11-22T11:20:00Z',
        },
      },
    },
  };
}
