import { decisionContext } from '../../src/config/decision-context.js';
import { decide, type Decision } from '../../src/core/decide.js';
import { loadConfig } from '../../src/config/load.js';
import { ruleContextFor } from '../../src/core/context.js';
import { readHook } from '../../src/core/hook.js';
import type { ClusterFacts } from '../../src/core/cluster.js';
import type { NamespaceSnapshot } from '../../src/core/namespaces.js';
import type { RuleContext, Stage } from '../../src/core/rule.js';
import type { KubeObject } from '../../src/core/types.js';
import { GUARD_CONTAINER_NAME } from '../../src/rules/min-runtime.js';

/** Argo CD's application controller: its ServiceAccount, and the user it is to the API server. */
export const ARGOCD_CONTROLLER_ACCOUNT = { namespace: 'argocd', name: 'argocd-application-controller' } as const;
export const ARGOCD_CONTROLLER = `system:serviceaccount:${ARGOCD_CONTROLLER_ACCOUNT.namespace}:${ARGOCD_CONTROLLER_ACCOUNT.name}`;
export const HOOK_FINALIZER = 'argocd.argoproj.io/hook-finalizer';

/** A small hook Job of our own: override any part with `patch`. */
export function hookJob(
  annotations: Record<string, string> = { 'helm.sh/hook': 'pre-upgrade' },
  spec: Record<string, unknown> = {},
): KubeObject {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: 'migrate', namespace: 'apps', annotations },
    spec: {
      template: {
        spec: {
          restartPolicy: 'Never',
          containers: [{ name: 'main', image: 'alpine:3.20', command: ['sh', '-c', 'echo hi'] }],
        },
      },
      ...spec,
    },
  };
}

export function hookPod(annotations: Record<string, string>): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name: 'check', namespace: 'apps', annotations },
    spec: { restartPolicy: 'Never', containers: [{ name: 'main', image: 'alpine:3.20', command: ['true'] }] },
  };
}

/** The context a rule sees, for an object applied as `username` with the given Argo CD version, at a stage. */
export function contextFor(
  object: KubeObject,
  options: {
    username?: string;
    argocdVersion?: string;
    stage?: Stage;
    /** The namespace watch's snapshot: the object's namespace is looked up in it. */
    namespaces?: NamespaceSnapshot;
    /** Config keys, as flags give them: `{ 'rules.meshSidecar.action': 'exclude' }`. */
    config?: Record<string, string>;
    /** What API discovery knows of the cluster (undefined: not read, or render time). */
    cluster?: ClusterFacts;
  } = {},
): RuleContext {
  const context = decisionContext(loadConfig({ overrides: options.config }), options.argocdVersion, options.stage);
  const hook = readHook(object, options.username ?? 'kubernetes-admin', context.config.hookDetection);
  if (!hook) throw new Error('test object is not a hook');
  return ruleContextFor(
    hook,
    { ...context, namespaces: options.namespaces, cluster: options.cluster },
    options.argocdVersion,
    object.metadata?.namespace,
  );
}

/**
 * The min-runtime guard container the default config adds to hookJob() and hookPod(), written out by hand: their
 * containers set no resources (BestEffort), so neither does the guard, and they set no user, so it runs as the
 * image's own, 65532 (distroless debug-nonroot), and says runAsNonRoot.
 */
export const DEFAULT_GUARD_CONTAINER = {
  name: GUARD_CONTAINER_NAME,
  image: 'gcr.io/distroless/static-debian12:debug-nonroot',
  imagePullPolicy: 'IfNotPresent',
  command: ['/busybox/sleep', '10'],
  securityContext: {
    allowPrivilegeEscalation: false,
    capabilities: { drop: ['ALL'] },
    privileged: false,
    readOnlyRootFilesystem: true,
    runAsNonRoot: true,
    seccompProfile: { type: 'RuntimeDefault' },
  },
};

/**
 * The mutating decision at admission on `object` with only `ruleId` among the default mutations that change a plain
 * hook Job: the others are named in hookguard.io/skip, so the patch is that rule's alone.
 */
export function admitWithOnly(ruleId: string, object: KubeObject, config: Record<string, string> = {}): Decision {
  const others = [
    'hook-ttl',
    'idempotent-cleanup',
    'ttl-floor',
    'min-runtime',
    'hook-deadline',
    'hook-label',
    'termination-message-policy',
  ];
  object.metadata!.annotations!['hookguard.io/skip'] = others.filter((id) => id !== ruleId).join(',');
  return decide(
    { uid: 'u', operation: 'CREATE', namespace: 'apps', userInfo: { username: 'kubernetes-admin' }, object },
    'mutate',
    decisionContext(loadConfig({ overrides: config })),
  );
}
