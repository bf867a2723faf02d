// Which repository a container image comes from, as the kubelet would pull it: tag, digest and Docker Hub's implicit
// "docker.io/library/" do not make two images different for hookguard's purposes.

const DOCKER_HUB_REGISTRIES = new Set(['docker.io', 'index.docker.io', 'registry-1.docker.io']);

/** "docker.io/library/alpine:3@sha256:…" → "alpine", "registry.k8s.io/kubectl:v1" → "registry.k8s.io/kubectl" */
export function imageRepository(image: string): string {
  const name = image.split('@')[0]!;
  // A colon before the last slash is a registry port, not a tag.
  const tagColon = name.indexOf(':', name.lastIndexOf('/') + 1);
  const [first, ...rest] = (tagColon === -1 ? name : name.slice(0, tagColon)).split('/');
  const path = rest.length > 0 && DOCKER_HUB_REGISTRIES.has(first!) ? rest : [first!, ...rest];
  return path.length === 2 && path[0] === 'library' ? path[1]! : path.join('/');
}
