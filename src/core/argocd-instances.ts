import { ARGOCD_TRACKING_ID } from './annotations.js';
import { addsHookFinalizer } from './argocd-version.js';
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

/**
 * An Argo CD that runs elsewhere and applies in this cluster as `username`: no controller runs here to discover.
 * `argocd cluster add` creates the service account `argocd-manager` in `kube-system` for it (argo-cd v3.5.1
 * util/clusterauth/clusterauth.go ArgoCDManagerServiceAccount, cmd/argocd/commands/cluster.go `--system-namespace`
 * default common.DefaultSystemNamespace "kube-system"); `--service-account`, `--system-namespace`, cloud
 * authentication and sync impersonation change it, hence configurable (`argocd.remote`).
 */
export interface RemoteArgo {
  username: string;
  /** Normalised version; undefined when the config does not say. */
  version: string | undefined;
}

export type VersionChosenBy =
  'config' | 'remote' | 'service-account' | 'tracking' | 'only-instance' | 'hook-finalizer' | 'union' | 'none';

/** An Argo CD that may have applied a hook: a local instance (by namespace) or a remote one (by identity). */
export interface Candidate {
  instance?: string;
  remote?: string;
  /** null when its version is unknown. */
  version: string | null;
}

export interface VersionChoice {
  /** The one version the hook is judged under; undefined when unknown, or a union of several versions. */
  version: string | undefined;
  by: VersionChosenBy;
  /** Namespace of the instance the version belongs to. */
  instance?: string;
  /** The remote identity the version belongs to. */
  remote?: string;
  /** With `by: 'union'`: every Argo CD that may have applied the hook. */
  candidates?: Candidate[];
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
  /** Argo CDs elsewhere that apply in this cluster as a known identity (`argocd.remote`). */
  remote?: readonly RemoteArgo[];
  trackingLabel?: string;
  /**
   * The request is a CREATE at admission of an object that already carries Argo CD's hook finalizer: Argo CD adds it
   * to the manifest before applying a sync hook (v3.5.1 gitops-engine/pkg/sync/sync_context.go getSyncTasks), so the
   * Argo CD that applied it is one that adds it. Not at render time, where no Argo CD has touched the manifest yet.
   */
  carriesHookFinalizer?: boolean;
}

const candidateOfInstance = (instance: ArgoInstance): Candidate => ({
  instance: instance.namespace,
  version: instance.version ?? null,
});
const candidateOfRemote = (remote: RemoteArgo): Candidate => ({
  remote: remote.username,
  version: remote.version ?? null,
});

function choiceOf(candidate: Candidate, by: VersionChosenBy): VersionChoice {
  return {
    version: candidate.version ?? undefined,
    by,
    ...(candidate.instance !== undefined ? { instance: candidate.instance } : {}),
    ...(candidate.remote !== undefined ? { remote: candidate.remote } : {}),
  };
}

/**
 * Which Argo CD version one admission request is judged under, first match wins:
 * 1. the pinned version;
 * 2. a remote Argo CD's identity: its configured version (unknown when it has none);
 * 3. the instance in the namespace of the requesting service account (Argo CD applies as its controller's);
 * 4. the instance named by the object's tracking id or label;
 * 5. otherwise every Argo CD that may have applied it: each instance, and each remote one with a version (an entry
 *    without one only names an identity, such as the default `argocd-manager`, and asserts no Argo CD). A CREATE
 *    that carries the hook finalizer drops the candidates known not to add it. One left: its version
 *    (`only-instance`, or `hook-finalizer` when the finalizer singled it out). Several: the union of their versions,
 *    never a guess at one (`union`; unknown when any of them is). None: unknown.
 * An Argo CD whose version is unknown still answers for itself: a request is never judged by another's version.
 */
export function chooseArgoVersion(question: VersionQuestion): VersionChoice {
  const { pinned, instances, username } = question;
  if (pinned !== undefined) return { version: pinned, by: 'config' };
  const remote = question.remote ?? [];
  const fromRemote = username === undefined ? undefined : remote.find((entry) => entry.username === username);
  if (fromRemote) return choiceOf(candidateOfRemote(fromRemote), 'remote');

  const serviceAccountNamespace = username === undefined ? undefined : SERVICE_ACCOUNT.exec(username)?.[1];
  const bySubject = serviceAccountNamespace === undefined ? undefined : instances.get(serviceAccountNamespace);
  if (bySubject) return choiceOf(candidateOfInstance(bySubject), 'service-account');
  for (const appName of trackedAppNames(question.object, question.trackingLabel)) {
    const namespace = namespaceOfAppName(appName);
    const byTracking = namespace === undefined ? undefined : instances.get(namespace);
    if (byTracking) return choiceOf(candidateOfInstance(byTracking), 'tracking');
  }

  const everyone = [
    ...[...instances.values()].map(candidateOfInstance),
    ...remote.filter((entry) => entry.version !== undefined).map(candidateOfRemote),
  ];
  const candidates = question.carriesHookFinalizer
    ? everyone.filter((candidate) => candidate.version === null || addsHookFinalizer(candidate.version))
    : everyone;
  if (candidates.length === 0) return { version: undefined, by: 'none' };
  if (candidates.length === 1)
    return choiceOf(candidates[0]!, candidates.length < everyone.length ? 'hook-finalizer' : 'only-instance');
  const versions = new Set(candidates.map((candidate) => candidate.version));
  // Several Argo CDs of one version: whichever applied it, that is the version.
  const version = versions.size === 1 ? (candidates[0]!.version ?? undefined) : undefined;
  return { version, by: 'union', candidates };
}

/**
 * The versions a choice judges a hook under, for ruleContextFor: the one version, or each candidate's of a union;
 * undefined when unknown (a union with an Argo CD of unknown version is unknown as a whole).
 */
export function judgedVersions(choice: VersionChoice | undefined): string | readonly string[] | undefined {
  if (choice === undefined) return undefined;
  if (choice.by !== 'union' || choice.version !== undefined) return choice.version;
  const versions = (choice.candidates ?? []).map((candidate) => candidate.version);
  return versions.every((version): version is string => version !== null) ? versions : undefined;
}
