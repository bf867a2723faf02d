import type { Container, JobSpec, KubeObject, ObjectMeta, PodSpec } from './types.js';

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function metadataOf(object: KubeObject): ObjectMeta | undefined {
  return isRecord(object.metadata) ? object.metadata : undefined;
}

/**
 * The first of `types`, in that order, whose condition in `status.conditions` has status "True" (a Job's Complete,
 * Failed, Suspended, …); undefined when none has.
 */
export function conditionTrue(object: KubeObject, types: readonly string[]): Record<string, unknown> | undefined {
  const status = isRecord(object.status) ? object.status : {};
  const conditions = Array.isArray(status.conditions) ? status.conditions.filter(isRecord) : [];
  for (const type of types) {
    const found = conditions.find((condition) => condition.type === type && condition.status === 'True');
    if (found) return found;
  }
  return undefined;
}

/** The object's metadata.namespace and metadata.name as text, empty where absent (a cluster-scoped object). */
export function namespacedName(object: KubeObject): { namespace: string; name: string } {
  const metadata = metadataOf(object);
  return { namespace: String(metadata?.namespace ?? ''), name: String(metadata?.name ?? '') };
}

/** A string-valued annotation; anything else (absent, wrong type) reads as undefined. */
export function annotation(object: KubeObject, key: string): string | undefined {
  const annotations = metadataOf(object)?.annotations;
  if (!isRecord(annotations)) return undefined;
  const value = annotations[key];
  return typeof value === 'string' ? value : undefined;
}

/** Sets an annotation, creating the metadata and annotations maps when they are missing. */
export function setAnnotation(object: KubeObject, key: string, value: string): void {
  if (!isRecord(object.metadata)) object.metadata = {};
  const metadata = object.metadata;
  if (!isRecord(metadata.annotations)) metadata.annotations = {};
  metadata.annotations[key] = value;
}

export function jobSpecOf(object: KubeObject): JobSpec | undefined {
  return isRecord(object.spec) ? object.spec : undefined;
}

/** The pod spec a Job or Pod runs: `spec.template.spec` for a Job, `spec` for a Pod. */
export function podSpecOf(object: KubeObject): PodSpec | undefined {
  if (object.kind === 'Pod') return isRecord(object.spec) ? object.spec : undefined;
  const template = jobSpecOf(object)?.template;
  return isRecord(template) && isRecord(template.spec) ? template.spec : undefined;
}

/** Init containers first, then containers: the order the kubelet runs them in. */
export function containersOf(podSpec: PodSpec): Container[] {
  // Plain loops: every rule that reads containers asks, on every hook object, and flatMap and filter cost more here.
  const containers: Container[] = [];
  for (const list of [podSpec.initContainers, podSpec.containers])
    if (Array.isArray(list)) for (const container of list) if (isRecord(container)) containers.push(container);
  return containers;
}

/**
 * How hookguard names an object to people, in every message and report: `Job ns/name`, `Job ns/migrate-*` for one
 * named by `generateName` (the API server adds the suffix), `<unnamed>` with neither.
 */
export function objectLabel(object: KubeObject): string {
  const metadata = metadataOf(object);
  const text = (value: unknown): string | undefined => (typeof value === 'string' && value !== '' ? value : undefined);
  const generateName = text(metadata?.generateName);
  const name = text(metadata?.name) ?? (generateName ? `${generateName}*` : '<unnamed>');
  const namespace = text(metadata?.namespace);
  return `${text(object.kind) ?? 'object'} ${namespace ? `${namespace}/` : ''}${name}`;
}

/** The object's finalizers that are strings; none when metadata.finalizers is missing or not a list. */
export function finalizersOf(object: KubeObject): string[] {
  const finalizers = metadataOf(object)?.finalizers;
  return Array.isArray(finalizers)
    ? finalizers.filter((finalizer): finalizer is string => typeof finalizer === 'string')
    : [];
}

/**
 * The copy of a hook object the mutation rules edit: the maps and lists a rule may write into (MutationRule.mutate
 * says which) are copied, one level each, and everything below them is shared with `object`. The diff and the
 * comparison that follow skip a shared subtree at once (it is the same value), so cloning and comparing cost what
 * the rules may touch rather than the size of the object (its env, volumes, probes, resources, scripts).
 */
export function cloneForRules(object: KubeObject): KubeObject {
  // Spreads copy an own `__proto__` key as a plain key, never as a prototype, and keep the keys' order (the diff's).
  const copy = { ...object };
  if (isRecord(copy.metadata)) copy.metadata = copyMetadata(copy.metadata);
  if (!isRecord(copy.spec)) return copy;
  // The pod spec where podSpecOf finds it: the spec of a Pod, the template's of anything else.
  if (copy.kind === 'Pod') {
    copy.spec = copyPodSpec(copy.spec);
    return copy;
  }
  const spec: JobSpec = { ...copy.spec };
  copy.spec = spec;
  if (!isRecord(spec.template)) return copy;
  const template: Record<string, unknown> = { ...spec.template };
  spec.template = template;
  if (isRecord(template.metadata)) template.metadata = copyMetadata(template.metadata);
  if (isRecord(template.spec)) template.spec = copyPodSpec(template.spec);
  return copy;
}

function copyMetadata(metadata: Record<string, unknown>): ObjectMeta {
  const copy: ObjectMeta = { ...metadata };
  if (isRecord(copy.annotations)) copy.annotations = { ...copy.annotations };
  if (isRecord(copy.labels)) copy.labels = { ...copy.labels };
  return copy;
}

/** A pod spec with its container lists, and each container in them, copied. */
function copyPodSpec(podSpec: Record<string, unknown>): PodSpec {
  const copy: PodSpec = { ...podSpec };
  if (Array.isArray(copy.initContainers)) copy.initContainers = copyContainers(copy.initContainers);
  if (Array.isArray(copy.containers)) copy.containers = copyContainers(copy.containers);
  return copy;
}

function copyContainers(containers: readonly unknown[]): Container[] {
  const copy: Container[] = [];
  // Anything else in the list is a primitive (JSON) or a list no rule writes into.
  for (const container of containers) copy.push(isRecord(container) ? { ...container } : (container as Container));
  return copy;
}

/** Deep equality of two JSON values: same keys (order aside), same items in the same order, same primitives. */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) || Array.isArray(b)) {
    if (!Array.isArray(a) || !Array.isArray(b) || a.length !== b.length) return false;
    for (let index = 0; index < a.length; index++) if (!jsonEqual(a[index], b[index])) return false;
    return true;
  }
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  const left = a as Record<string, unknown>;
  const right = b as Record<string, unknown>;
  for (const key of keys) {
    const leftValue = left[key];
    const rightValue = right[key];
    // A shared subtree or an equal primitive, the usual case, without a call (undefined may be a missing key).
    if (leftValue === rightValue && leftValue !== undefined) continue;
    if (!Object.hasOwn(right, key) || !jsonEqual(leftValue, rightValue)) return false;
  }
  return true;
}
