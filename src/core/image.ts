// Which repository a container image comes from, as the kubelet would pull it: tag, digest and Docker Hub's implicit
// "docker.io/library/" do not make two images different for hookguard's purposes.

const DOCKER_HUB_REGISTRIES = new Set(['docker.io', 'index.docker.io', 'registry-1.docker.io']);
/** Docker Hub's namespace of official images: `library/alpine` is `alpine`. */
const OFFICIAL_IMAGES = 'library/';

/** "docker.io/library/alpine:3@sha256:…" → "alpine", "registry.k8s.io/kubectl:v1" → "registry.k8s.io/kubectl" */
export function imageRepository(image: string): string {
  // Slices, no lists of parts: min-runtime and idempotent-cleanup ask for every container of every hook.
  const digest = image.indexOf('@');
  const name = digest === -1 ? image : image.slice(0, digest);
  // A colon before the last slash is a registry port, not a tag.
  const tagColon = name.indexOf(':', name.lastIndexOf('/') + 1);
  let path = tagColon === -1 ? name : name.slice(0, tagColon);
  const firstSlash = path.indexOf('/');
  if (firstSlash !== -1 && DOCKER_HUB_REGISTRIES.has(path.slice(0, firstSlash))) path = path.slice(firstSlash + 1);
  return path.startsWith(OFFICIAL_IMAGES) && !path.includes('/', OFFICIAL_IMAGES.length)
    ? path.slice(OFFICIAL_IMAGES.length)
    : path;
}
