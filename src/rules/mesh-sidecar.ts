import type { NamespaceFacts } from '../core/namespaces.js';
import { isRecord, jobSpecOf } from '../core/objects.js';
import { report, type MutationRule, type RuleSettings } from '../core/rule.js';

// A classic mesh sidecar (a regular container) keeps running after the hook's own containers exit, so the Pod never
// completes and neither does the Job (istio#11045, helm#5098, gatekeeper#1978). A native sidecar (an init container
// with restartPolicy Always) is stopped by the kubelet once they exit: those Jobs complete.

// Istio, istio/istio 1.30.3. Which injector webhook the API server calls is decided by the namespace labels and the
// pod *labels* alone (manifests/charts/istio-control/istio-discovery/templates/mutatingwebhook.yaml); istiod then
// injects unless the pod label, or without one the annotation, says "false" (pkg/kube/inject/inject.go
// injectRequired, with the default policy `enabled` and empty never/always selectors).
const ISTIO_INJECT = 'sidecar.istio.io/inject';
// What the pod's own value (the label, else the annotation) says to injectRequired. Istio up to 1.26 lowercases it:
// y, yes, true, on inject, "" is the default, anything else does not inject. From 1.27 (istio#56737, commit
// 331d32e30a3) only "true" and "false" count and any other value is the default (1.30.3). Where they agree: "false"
// never injects, "" is the default, and a y/yes/true/on value is the author's opt-in, on every version.
const ISTIO_YES: readonly string[] = ['y', 'yes', 'true', 'on'];
const ISTIO_REVISION = 'istio.io/rev';
const ISTIO_NAMESPACE_INJECTION = 'istio-injection';
// Per pod since Istio 1.24 (inject.go: "takes precedence over the global feature flag"); ENABLE_NATIVE_SIDECARS
// defaults to `auto` since 1.27 (pilot/pkg/features/pilot.go): native when every node runs Kubernetes 1.33 or later
// (webhook.go DetectNativeSidecar).
const ISTIO_NATIVE = 'sidecar.istio.io/nativeSidecar';
// istiod's IgnoredNamespaces: it never injects there.
const ISTIO_IGNORED_NAMESPACES: readonly string[] = [
  'kube-system',
  'kube-public',
  'kube-node-lease',
  'local-path-storage',
];

// Linkerd, linkerd/linkerd2 edge-26.8.3. `linkerd.io/inject` is an annotation on the namespace or the pod; the pod's
// wins; `enabled` and `ingress` inject, an invalid value on either disables (pkg/inject/report.go
// disabledByAnnotation). The webhook skips namespaces labelled config.linkerd.io/admission-webhooks=disabled and,
// with the chart's default values, kube-system and cert-manager (charts/linkerd-control-plane/values.yaml).
const LINKERD_INJECT = 'linkerd.io/inject';
const LINKERD_WEBHOOKS = 'config.linkerd.io/admission-webhooks';
const LINKERD_SKIPPED_NAMESPACES: readonly string[] = ['kube-system', 'cert-manager'];
const LINKERD_INJECT_VALUES: readonly string[] = ['enabled', 'ingress', 'disabled'];
// GA, beta and alpha spellings, in that precedence (pkg/inject/inject.go ApplyAnnotationOverrides); proxy.nativeSidecar
// defaults to true from edge-26.5.2 / version-2.20 (linkerd2#15267). The namespace's GA and alpha annotations are the
// pod's defaults (AppendNamespaceAnnotations; the beta one is not in ProxyAnnotations).
const LINKERD_NATIVE = [
  'config.linkerd.io/proxy-enable-native-sidecar',
  'config.beta.linkerd.io/proxy-enable-native-sidecar',
  'config.alpha.linkerd.io/proxy-enable-native-sidecar',
] as const;
const LINKERD_NATIVE_INHERITED: readonly string[] = [LINKERD_NATIVE[0], LINKERD_NATIVE[2]];
// Go's strconv.ParseBool.
const GO_TRUE: readonly string[] = ['1', 't', 'T', 'TRUE', 'true', 'True'];
const GO_FALSE: readonly string[] = ['0', 'f', 'F', 'FALSE', 'false', 'False'];

/** The namespace labels and annotations this rule reads: the server's namespace watch keeps these and no others. */
export const MESH_NAMESPACE_KEYS = {
  labels: [ISTIO_NAMESPACE_INJECTION, ISTIO_REVISION, LINKERD_WEBHOOKS],
  annotations: [LINKERD_INJECT, ...LINKERD_NATIVE_INHERITED],
} as const;

type Keys = Readonly<Record<string, unknown>> | undefined;

function read(map: Keys, key: string): string | undefined {
  const value = map?.[key];
  return typeof value === 'string' ? value : undefined;
}

interface Sidecar {
  mesh: 'Istio' | 'Linkerd';
  container: string;
  /** The chart's pod template asks for the sidecar (its author chose the mesh), or only the namespace does. */
  askedByPod: boolean;
  /**
   * The pod's own switch holds a value the mesh's versions read differently (Istio: not y/yes/true/on, "false" or "");
   * it is the author's, so it is never overwritten, and the sidecar only "may" come.
   */
  unclearValue?: string;
  /** A per-pod (for Linkerd also per-namespace) choice of native or classic sidecar; undefined: the mesh's default. */
  native: boolean | undefined;
  /** How to keep the Job out of injection, and how to ask for a native sidecar instead. */
  exclude: { where: 'labels' | 'annotations'; key: string; value: string };
  nativeFix: string;
}

interface PodTemplate {
  labels: Keys;
  annotations: Keys;
  hostNetwork: boolean;
}

function istioSidecar(pod: PodTemplate, namespace: NamespaceFacts | undefined): Sidecar | undefined {
  const podLabel = read(pod.labels, ISTIO_INJECT);
  const podAnnotation = read(pod.annotations, ISTIO_INJECT);
  const podRevision = read(pod.labels, ISTIO_REVISION);
  const namespaceInjection = read(namespace?.labels, ISTIO_NAMESPACE_INJECTION);
  // The webhooks: istio-injection=enabled; else istio.io/rev on the namespace; else istio.io/rev on the pod (each
  // unless the pod label says "false"); else only a pod label "true". Any other istio-injection value: none.
  const webhook =
    namespaceInjection !== undefined
      ? namespaceInjection === 'enabled'
      : read(namespace?.labels, ISTIO_REVISION) !== undefined || podRevision !== undefined
        ? podLabel !== 'false'
        : podLabel === 'true';
  if (!webhook || pod.hostNetwork || (namespace && ISTIO_IGNORED_NAMESPACES.includes(namespace.name))) return undefined;
  // injectRequired reads the label, and the annotation only where there is no label.
  const selector = podLabel ?? podAnnotation ?? '';
  if (selector === 'false') return undefined;
  const optedIn = ISTIO_YES.includes(selector.toLowerCase());
  const native = read(pod.annotations, ISTIO_NATIVE);
  return {
    mesh: 'Istio',
    container: 'istio-proxy',
    askedByPod: optedIn || podRevision !== undefined,
    ...(selector !== '' && !optedIn ? { unclearValue: selector } : {}),
    native: native === 'true' ? true : native === 'false' ? false : undefined,
    exclude: { where: 'labels', key: ISTIO_INJECT, value: 'false' },
    nativeFix: `${ISTIO_NATIVE}=true`,
  };
}

function linkerdNative(pod: PodTemplate, namespace: NamespaceFacts | undefined): boolean | undefined {
  const podKey = LINKERD_NATIVE.find((key) => read(pod.annotations, key) !== undefined);
  const namespaceKey = LINKERD_NATIVE_INHERITED.find((key) => read(namespace?.annotations, key) !== undefined);
  // The namespace's value counts where the pod sets none of the same key; then GA before beta before alpha.
  const key = LINKERD_NATIVE.find((candidate) => candidate === podKey || candidate === namespaceKey);
  if (key === undefined) return undefined;
  const value = read(pod.annotations, key) ?? read(namespace?.annotations, key) ?? '';
  return GO_TRUE.includes(value) ? true : GO_FALSE.includes(value) ? false : undefined;
}

function linkerdSidecar(pod: PodTemplate, namespace: NamespaceFacts | undefined): Sidecar | undefined {
  if (
    pod.hostNetwork ||
    (namespace &&
      (read(namespace.labels, LINKERD_WEBHOOKS) === 'disabled' || LINKERD_SKIPPED_NAMESPACES.includes(namespace.name)))
  )
    return undefined;
  const podValue = read(pod.annotations, LINKERD_INJECT);
  const namespaceValue = read(namespace?.annotations, LINKERD_INJECT);
  const valid = (value: string | undefined) => value === undefined || LINKERD_INJECT_VALUES.includes(value);
  const enables = (value: string | undefined) => value === 'enabled' || value === 'ingress';
  if (!valid(podValue) || !valid(namespaceValue)) return undefined;
  if (!enables(podValue) && (!enables(namespaceValue) || podValue === 'disabled')) return undefined;
  return {
    mesh: 'Linkerd',
    container: 'linkerd-proxy',
    askedByPod: enables(podValue),
    native: linkerdNative(pod, namespace),
    exclude: { where: 'annotations', key: LINKERD_INJECT, value: 'disabled' },
    nativeFix: `${LINKERD_NATIVE[0]}=true`,
  };
}

/** Whether the sidecar may be a classic one: true (it is), undefined (it may be), false (it is native). */
function classic(sidecar: Sidecar, settings: RuleSettings['meshSidecar']): boolean | undefined {
  if (sidecar.native !== undefined) return !sidecar.native;
  return settings.nativeSidecars === 'unknown' ? undefined : settings.nativeSidecars === 'no';
}

/**
 * A hook Job whose Pods will get a classic mesh sidecar never completes. Decided from the pod template and, at
 * admission, the namespace's labels and annotations from the server's namespace watch: until that has synced it says
 * nothing rather than guess. At render time no namespace is known, so only a pod template that asks for the sidecar
 * is reported. hookguard cannot see the mesh's version or the nodes' (which decide native sidecars by default), so
 * without a per-pod choice it goes by `nativeSidecars`, and by default says "may".
 */
export const meshSidecar: MutationRule = {
  id: 'mesh-sidecar',
  doc: 'Warns about hook Jobs whose Pods get a classic Istio or Linkerd sidecar, which keeps them from completing; with action exclude, takes them out of injection where the namespace asked for it.',
  stages: ['admission', 'render'],
  kinds: ['Job'],
  gate: 'always',
  mutate(object, { stage, namespace, settings }) {
    const meshSettings = settings.meshSidecar;
    if (meshSettings.action === 'off' || (stage === 'admission' && namespace === undefined)) return report();
    const template = jobSpecOf(object)?.template;
    if (!isRecord(template)) return report();
    const metadata = isRecord(template.metadata) ? template.metadata : undefined;
    const pod: PodTemplate = {
      labels: isRecord(metadata?.labels) ? metadata.labels : undefined,
      annotations: isRecord(metadata?.annotations) ? metadata.annotations : undefined,
      hostNetwork: isRecord(template.spec) && template.spec.hostNetwork === true,
    };
    const mutations: string[] = [];
    const warnings: string[] = [];
    for (const sidecar of [istioSidecar(pod, namespace), linkerdSidecar(pod, namespace)]) {
      if (!sidecar) continue;
      // An unclear value: Istio up to 1.26 does not inject, from 1.27 the namespace decides.
      const isClassic = sidecar.unclearValue !== undefined ? undefined : classic(sidecar, meshSettings);
      if (isClassic === false) continue;
      // Admission warnings are cut at 120 characters: what and the fix first, then why and the other fix.
      const keeps = `${sidecar.container} ${isClassic ? 'keeps' : 'may keep'} this Job running`;
      const { where, key, value } = sidecar.exclude;
      const fix = `pod ${where === 'labels' ? 'label' : 'annotation'} ${key}=${value}`;
      const native = `a native sidecar would not: annotation ${sidecar.nativeFix}`;
      if (sidecar.unclearValue !== undefined) {
        warnings.push(
          `${keeps}; ${fix} fixes it (Istio 1.27+ reads ${key}="${sidecar.unclearValue}" as unset; ${native})`,
        );
      } else if (sidecar.askedByPod || !namespace) {
        warnings.push(`${keeps}; ${fix} fixes it (the pod template asks for it; ${native})`);
      } else if (meshSettings.action === 'exclude') {
        if (!isRecord(template.metadata)) template.metadata = {};
        const podMetadata = template.metadata as Record<string, unknown>;
        if (!isRecord(podMetadata[where])) podMetadata[where] = {};
        (podMetadata[where] as Record<string, unknown>)[key] = value;
        mutations.push(`set ${fix}: ${keeps} (namespace ${namespace.name} injects it; ${native})`);
      } else {
        warnings.push(`${keeps}; ${fix} fixes it (namespace ${namespace.name} injects it; ${native})`);
      }
    }
    return report({ mutations, warnings });
  },
};
