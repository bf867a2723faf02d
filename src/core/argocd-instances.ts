import { ARGOCD_TRACKING_ID } from './annotations.js';
import { isRecord, metadataOf } from './objects.js';
import type { KubeObject } from './types.js';

/** One Argo CD installation, keyed by the namespace its application controller runs in. */
export interface ArgoInstance {
  namespace: string;
  /** Normalised version ("2.14.3"); undefined when the controller does not say which code it runs. */
  version: string | undefined;
  /** Where the version came from, or why it is unknown, in words for the log and /readyz. */
  source: string;
  /** The service accounts its controllers run as (`system:serviceaccount:NS:NAME`): what it applies, it applies as them. */
  controllerUsernames: readonly string[];
}

/** The instances known at one moment, by namespace: a snapshot, never mutated after it is handed out. */
export type ArgoInstances = ReadonlyMap<string, ArgoInstance>;

export const NO_INSTANCES: ArgoInstances = new Map();

export type VersionChosenBy = 'config' | 'service-account' | 'tracking' | 'only-instance' | 'none';

export interface VersionChoice {
  version: string | undefined;
  by: VersionChosenBy;
  /** Namespace of the instance the version belongs to. */
  instance?: string;
}

const SERVICE_ACCOUNT = /^system:serviceaccount:([^:]+):[^:]+$/;

/**
 * The namespace an Argo CD application name points at. With "apps in any namespace" Argo CD writes
 * `<namespace>_<app>` into its tracking id and label; a bare `<app>` names no namespace.
 */
function namespaceOfAppName(appName: string): string | undefined {
  const separator = appName.indexOf('_');
  return separator > 0 ? appName.slice(0, separator) : undefined;
}

/** Application names the object carries: the tracking id (`<app>:<group>/<kind>:<ns>/<name>`) and the tracking label. */
function trackedAppNames(object: KubeObject, trackingLabel: string | undefined): string[] {
  const metadata = metadataOf(object);
  const names: string[] = [];
  const trackingId = isRecord(metadata?.annotations) ? metadata.annotations[ARGOCD_TRACKING_ID] : undefined;
  if (typeof trackingId === 'string' && trackingId.includes(':'))
    names.push(trackingId.slice(0, trackingId.indexOf(':')));
  const label = trackingLabel !== undefined && isRecord(metadata?.labels) ? metadata.labels[trackingLabel] : undefined;
  if (typeof label === 'string' && label !== '') names.push(label);
  return names;
}

export interface VersionQuestion {
  username: string | undefined;
  object: KubeObject;
  /** `argocd.version` from the config or a flag: it wins over discovery. */
  pinned: string | undefined;
  instances: ArgoInstances;
  trackingLabel?: string;
}

/**
 * Which Argo CD version one admission request is judged under, first match wins:
 * the pinned version; the instance in the namespace of the requesting service account (Argo CD applies
 * as its controller's service account); the instance named by the object's tracking id or label; the only
 * instance, when the cluster has exactly one; else unknown. An instance whose version is unknown still
 * answers for itself: a request is never judged by another instance's version.
 */
export function chooseArgoVersion(question: VersionQuestion): VersionChoice {
  const { pinned, instances } = question;
  if (pinned !== undefined) return { version: pinned, by: 'config' };
  const found = (instance: ArgoInstance | undefined, by: VersionChosenBy): VersionChoice | undefined =>
    instance ? { version: instance.version, by, instance: instance.namespace } : undefined;

  const serviceAccountNamespace =
    question.username === undefined ? undefined : SERVICE_ACCOUNT.exec(question.username)?.[1];
  const bySubject =
    serviceAccountNamespace === undefined
      ? undefined
      : found(instances.get(serviceAccountNamespace), 'service-account');
  if (bySubject) return bySubject;
  for (const appName of trackedAppNames(question.object, question.trackingLabel)) {
    const namespace = namespaceOfAppName(appName);
    const byTracking = namespace === undefined ? undefined : found(instances.get(namespace), 'tracking');
    if (byTracking) return byTracking;
  }
  if (instances.size === 1) return found([...instances.values()][0], 'only-instance') as VersionChoice;
  return { version: undefined, by: 'none' };
}
