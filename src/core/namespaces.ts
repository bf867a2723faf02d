// What the server knows of the cluster's namespaces, for rules whose effect depends on them (mesh-sidecar): a
// snapshot its namespace watch publishes and the DecisionContext carries, never a call to the API server per request.

/** The labels and annotations of one namespace that rules read; the watch keeps only those keys. */
export interface NamespaceFacts {
  name: string;
  labels: Readonly<Record<string, string>>;
  annotations: Readonly<Record<string, string>>;
}

/**
 * The namespaces known at one moment, by name, each with the keys rules read. A namespace a synced snapshot does not
 * hold carries none of those keys (or was created a moment ago and is on its way).
 */
export type NamespaceSnapshot = ReadonlyMap<string, NamespaceFacts>;

const NO_KEYS: Readonly<Record<string, string>> = Object.freeze({});

/** The facts of one namespace in a snapshot; undefined when no snapshot is known (render time, or not yet synced). */
export function namespaceFacts(
  snapshot: NamespaceSnapshot | undefined,
  name: string | undefined,
): NamespaceFacts | undefined {
  if (snapshot === undefined || typeof name !== 'string') return undefined;
  return snapshot.get(name) ?? { name, labels: NO_KEYS, annotations: NO_KEYS };
}
