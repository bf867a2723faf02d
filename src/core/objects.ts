import type { Container, JobSpec, KubeObject, ObjectMeta, PodSpec } from './types.js';

export function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

export function metadataOf(object: KubeObject): ObjectMeta | undefined {
  return isRecord(object.metadata) ? object.metadata : undefined;
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
  const metadata = object.metadata as ObjectMeta;
  if (!isRecord(metadata.annotations)) metadata.annotations = {};
  (metadata.annotations as Record<string, string>)[key] = value;
}

export function jobSpecOf(object: KubeObject): JobSpec | undefined {
  return isRecord(object.spec) ? (object.spec as JobSpec) : undefined;
}

/** The pod spec a Job or Pod runs: `spec.template.spec` for a Job, `spec` for a Pod. */
export function podSpecOf(object: KubeObject): PodSpec | undefined {
  if (object.kind === 'Pod') return isRecord(object.spec) ? (object.spec as PodSpec) : undefined;
  const template = jobSpecOf(object)?.template;
  return isRecord(template) && isRecord(template.spec) ? template.spec : undefined;
}

/** Init containers first, then containers: the order the kubelet runs them in. */
export function containersOf(podSpec: PodSpec): Container[] {
  const lists = [podSpec.initContainers, podSpec.containers];
  return lists.flatMap((list) => (Array.isArray(list) ? list.filter(isRecord) : [])) as Container[];
}

export function describeObject(object: KubeObject): string {
  const metadata = metadataOf(object);
  const name = metadata?.name ?? (metadata?.generateName ? `${metadata.generateName}*` : '<unnamed>');
  return metadata?.namespace ? `${object.kind ?? 'object'} ${metadata.namespace}/${name}` : `${object.kind ?? 'object'} ${name}`;
}
