// Well-known keys, in one place so a typo cannot split a rule from its test.
export const HELM_HOOK = 'helm.sh/hook';
export const HELM_DELETE_POLICY = 'helm.sh/hook-delete-policy';
export const ARGOCD_HOOK = 'argocd.argoproj.io/hook';
export const ARGOCD_DELETE_POLICY = 'argocd.argoproj.io/hook-delete-policy';
export const ARGOCD_TRACKING_ID = 'argocd.argoproj.io/tracking-id';
/** The label Argo CD tracks with by default (argocd-cm application.instanceLabelKey; argo-cd common/common.go). */
export const ARGOCD_INSTANCE_LABEL = 'app.kubernetes.io/instance';
export const ARGOCD_HOOK_FINALIZER = 'argocd.argoproj.io/hook-finalizer';
/** Comma-separated sync options of one resource (gitops-engine pkg/sync/common/types.go AnnotationSyncOptions). */
export const ARGOCD_SYNC_OPTIONS = 'argocd.argoproj.io/sync-options';

/** Comma-separated rule ids this object opts out of. */
export const HOOKGUARD_SKIP = 'hookguard.io/skip';
/** `audit` makes hookguard only report on this object, whatever the global mode. */
export const HOOKGUARD_MODE = 'hookguard.io/mode';
/** hookguard's guard init container (the min-runtime rule): never the cause `hookguard why` names. */
export const GUARD_CONTAINER_NAME = 'hookguard-min-runtime';
/** Overrides minRuntimeSeconds for this object. */
export const HOOKGUARD_MIN_RUNTIME_SECONDS = 'hookguard.io/min-runtime-seconds';

// Argo Workflows (argoproj/argo-workflows v4.1.2 workflow/common/common.go): the pod finalizer its controller adds
// with ARGO_POD_STATUS_CAPTURE_FINALIZER=true (v3.6.0+), the node a workflow pod runs (annotation), and the label
// that marks a Workflow or pod completed ("true").
export const ARGO_WORKFLOWS_STATUS_FINALIZER = 'workflows.argoproj.io/status';
export const ARGO_WORKFLOWS_NODE_ID = 'workflows.argoproj.io/node-id';
export const ARGO_WORKFLOWS_COMPLETED = 'workflows.argoproj.io/completed';
/**
 * The label hookguard puts on the hook Jobs and Pods it admits (rule hook-label), so the hook watcher lists and
 * watches only those with a label selector, never every Job and Pod of the cluster.
 */
export const HOOKGUARD_HOOK_LABEL = 'hookguard.io/hook';
export const HOOKGUARD_HOOK_LABEL_VALUE = 'admitted';
/** `"true"` on a hook or its namespace: the hook watcher's Event may carry the last log lines of the failed container. */
export const HOOKGUARD_EVENT_LOGS = 'hookguard.io/event-logs';
