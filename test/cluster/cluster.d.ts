// cluster.js is plain JavaScript that node runs (npm run cluster:up); this declares the part of it the tests import.

/** What cluster.js builds, each into a folder of its own in the cache. */
export type ToolName = 'kubernetes' | 'etcd' | 'helm4' | 'celcost' | 'argo-sync' | 'helm-controller' | 'helm3';

/** Is there a Go to build with? */
export function goOnPath(): boolean;

/** Every tool cluster.js builds: the cluster's own, and the oracles only the cluster tests run. */
export const ALL_TOOLS: readonly ToolName[];

/**
 * Builds the named tools (all by default) that are missing from the cache; the folder of each one's binaries. The Go
 * modules of the tools named in `alsoFetch` (and of those built after the first) download meanwhile.
 */
export function build<Name extends ToolName>(
  names?: readonly Name[],
  options?: { alsoFetch?: readonly ToolName[] },
): Record<Name, string>;

/** The folder of each named tool's binaries, built before; throws, naming the first one missing, and never builds. */
export function built<Name extends ToolName>(names: readonly Name[]): Record<Name, string>;

/** The namespace the cluster installs hookguard in, as `helm install --namespace hookguard` would. */
export const HOOKGUARD_NAMESPACE: string;
