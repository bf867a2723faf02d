// Pure: what a Helm release record says, read defensively from its decoded JSON. The record is Helm's
// `release.Release` (helm v3.21.4 and v4.3.2 pkg/release/v1/release.go, info.go, hook.go): the same JSON field names
// in Helm 3 and 4.
import { isRecord } from './objects.js';

/** A hook as Helm recorded it (hook.go `Hook`, `HookExecution`). */
export interface ReleaseHook {
  name: string;
  kind: string;
  /** The template it came from (`path`). */
  path: string;
  events: string[];
  weight: number;
  deletePolicies: string[];
  outputLogPolicies: string[];
  /** `last_run.phase`: Unknown, Running, Succeeded, Failed; '' when Helm never ran it. */
  lastRunPhase: string;
  lastRunStartedAt: string | undefined;
  lastRunCompletedAt: string | undefined;
  /** The namespace its manifest names, if any (Helm deploys it to the release's otherwise). */
  namespace: string | undefined;
}

export interface HelmRelease {
  name: string;
  namespace: string;
  version: number;
  /** info.status: deployed, failed, pending-install, pending-upgrade, pending-rollback, uninstalling, … */
  status: string;
  description: string;
  firstDeployed: string | undefined;
  lastDeployed: string | undefined;
  chart: string;
  hooks: ReleaseHook[];
}

const text = (value: unknown): string => (typeof value === 'string' ? value : '');
const optionalText = (value: unknown): string | undefined =>
  typeof value === 'string' && value !== '' ? value : undefined;
const texts = (value: unknown): string[] =>
  Array.isArray(value) ? value.filter((item): item is string => typeof item === 'string') : [];

/** The namespace a hook's manifest names: its first `namespace:` under `metadata:`, the only one Helm's own reader sees. */
function manifestNamespace(manifest: string): string | undefined {
  const match = /^metadata:\s*\n(?:[ \t]+.*\n)*?[ \t]+namespace:[ \t]*["']?([a-z0-9][-a-z0-9]*)["']?[ \t]*$/m.exec(
    manifest,
  );
  return match?.[1];
}

function hookOf(value: unknown): ReleaseHook | undefined {
  if (!isRecord(value)) return undefined;
  const lastRun = isRecord(value.last_run) ? value.last_run : {};
  return {
    name: text(value.name),
    kind: text(value.kind),
    path: text(value.path),
    events: texts(value.events),
    weight: typeof value.weight === 'number' && Number.isFinite(value.weight) ? value.weight : 0,
    deletePolicies: texts(value.delete_policies),
    outputLogPolicies: texts(value.output_log_policies),
    lastRunPhase: text(lastRun.phase),
    lastRunStartedAt: optionalText(lastRun.started_at),
    lastRunCompletedAt: optionalText(lastRun.completed_at),
    namespace: manifestNamespace(text(value.manifest)),
  };
}

/** A release record's JSON as hookguard reads it; undefined when it is no release (no name or no info). */
export function readHelmRelease(json: unknown): HelmRelease | undefined {
  if (!isRecord(json) || typeof json.name !== 'string' || !isRecord(json.info)) return undefined;
  const info = json.info;
  const metadata = isRecord(json.chart) && isRecord(json.chart.metadata) ? json.chart.metadata : {};
  const chart = [text(metadata.name), text(metadata.version)].filter((part) => part !== '').join('-');
  return {
    name: json.name,
    namespace: text(json.namespace),
    version: typeof json.version === 'number' ? json.version : 0,
    status: text(info.status),
    description: text(info.description),
    firstDeployed: optionalText(info.first_deployed),
    lastDeployed: optionalText(info.last_deployed),
    chart,
    hooks: (Array.isArray(json.hooks) ? json.hooks : [])
      .map(hookOf)
      .filter((hook): hook is ReleaseHook => hook !== undefined),
  };
}

/**
 * The storage object of each revision: `sh.helm.release.v1.NAME.vN` (helm v4.3.2 pkg/storage/storage.go makeKey,
 * HelmStorageType), a Secret of type `helm.sh/release.v1` by default, a ConfigMap under HELM_DRIVER=configmap, both
 * labelled `owner=helm`, `name=NAME`, `version=N`, `status=…` (pkg/storage/driver/secrets.go, cfgmaps.go newSecretsObject).
 */
export function releaseObjectName(name: string, revision: number): string {
  return `sh.helm.release.v1.${name}.v${revision}`;
}

/** The label selector that lists every revision of release NAME. */
export function releaseSelector(name: string): string {
  return `owner=helm,name=${name}`;
}

/** The newest revision among storage objects' `version` labels, or the one asked for; undefined when absent. */
export function chooseRevision(versions: readonly number[], asked: number | undefined): number | undefined {
  if (asked !== undefined) return versions.includes(asked) ? asked : undefined;
  return versions.length === 0 ? undefined : Math.max(...versions);
}

/** One revision's storage object as its labels say (owner=helm, name, version, status), without its record. */
export interface StoredRevision {
  namespace: string;
  name: string;
  version: number;
  status: string;
}

/** The statuses `why -A` looks into: an operation that failed or has not ended. */
const LOOKED_INTO = new Set(['failed', 'pending-install', 'pending-upgrade', 'pending-rollback', 'uninstalling']);

/**
 * The releases `why -A` explains: each release's newest revision (a failed upgrade rolled back or upgraded since is
 * history), when that revision failed or is still pending, in namespace and name order.
 */
export function releasesToExplain(revisions: readonly StoredRevision[]): StoredRevision[] {
  const newest = new Map<string, StoredRevision>();
  for (const revision of revisions) {
    const key = `${revision.namespace}/${revision.name}`;
    const seen = newest.get(key);
    if (seen === undefined || revision.version > seen.version) newest.set(key, revision);
  }
  return [...newest.values()]
    .filter((revision) => LOOKED_INTO.has(revision.status))
    .sort((a, b) => a.namespace.localeCompare(b.namespace) || a.name.localeCompare(b.name));
}
