// The Pod Security checks a container can fail, re-implemented for tests from kubernetes/pod-security-admission
// v0.36.2 (Kubernetes 1.36.2) policy/: check_privileged.go (baseline), check_allowPrivilegeEscalation.go,
// check_capabilities_restricted.go, check_seccompProfile_restricted.go, check_runAsNonRoot.go and check_runAsUser.go
// (restricted), each at its latest version: Windows Pods are exempt from the first three restricted checks since
// 1.25, and Pods in a user namespace (hostUsers: false) from runAsNonRoot and runAsUser since 1.35. Messages are
// theirs ("reason: detail"). The checks of volumes, host namespaces, ports, sysctls, AppArmor and SELinux are left
// out: hookguard's guard touches none of them.
type Record_ = Record<string, unknown>;

interface Container extends Record_ {
  name?: string;
  securityContext?: Record_;
}

export interface PodSpecLike extends Record_ {
  containers?: Container[];
  initContainers?: Container[];
  securityContext?: Record_;
}

const isWindows = (pod: PodSpecLike) => (pod.os as { name?: string } | undefined)?.name === 'windows';
const inUserNamespace = (pod: PodSpecLike) => pod.hostUsers === false;

function containers(pod: PodSpecLike): Container[] {
  return [...(pod.initContainers ?? []), ...(pod.containers ?? [])];
}

const names = (list: Container[]) =>
  `${list.length === 1 ? 'container' : 'containers'} ${list.map((container) => `"${container.name}"`).join(', ')}`;

function privileged(pod: PodSpecLike): string | undefined {
  const bad = containers(pod).filter((container) => container.securityContext?.privileged === true);
  return bad.length ? `privileged: ${names(bad)} must not set securityContext.privileged=true` : undefined;
}

function allowPrivilegeEscalation(pod: PodSpecLike): string | undefined {
  if (isWindows(pod)) return undefined;
  const bad = containers(pod).filter((container) => container.securityContext?.allowPrivilegeEscalation !== false);
  return bad.length
    ? `allowPrivilegeEscalation != false: ${names(bad)} must set securityContext.allowPrivilegeEscalation=false`
    : undefined;
}

function capabilities(pod: PodSpecLike): string | undefined {
  if (isWindows(pod)) return undefined;
  const missingDropAll = containers(pod).filter((container) => {
    const drop = (container.securityContext?.capabilities as { drop?: unknown[] } | undefined)?.drop;
    return !Array.isArray(drop) || !drop.includes('ALL');
  });
  const adding = containers(pod).filter((container) => {
    const add = (container.securityContext?.capabilities as { add?: unknown[] } | undefined)?.add;
    return Array.isArray(add) && add.some((capability) => capability !== 'NET_BIND_SERVICE');
  });
  const details = [
    ...(missingDropAll.length ? [`${names(missingDropAll)} must set securityContext.capabilities.drop=["ALL"]`] : []),
    ...(adding.length ? [`${names(adding)} must not add capabilities other than NET_BIND_SERVICE`] : []),
  ];
  return details.length ? `unrestricted capabilities: ${details.join('; ')}` : undefined;
}

const validSeccomp = (profile: unknown) => {
  const type = (profile as { type?: unknown } | undefined)?.type;
  return type === 'RuntimeDefault' || type === 'Localhost';
};

function seccompProfile(pod: PodSpecLike): string | undefined {
  if (isWindows(pod)) return undefined;
  const podProfile = pod.securityContext?.seccompProfile;
  if (podProfile !== undefined && !validSeccomp(podProfile)) return 'seccompProfile: pod sets a forbidden type';
  const explicitlyBad = containers(pod).filter(
    (container) =>
      container.securityContext?.seccompProfile !== undefined &&
      !validSeccomp(container.securityContext.seccompProfile),
  );
  if (explicitlyBad.length) return `seccompProfile: ${names(explicitlyBad)} set a forbidden type`;
  const implicitlyBad =
    podProfile !== undefined
      ? []
      : containers(pod).filter((container) => container.securityContext?.seccompProfile === undefined);
  return implicitlyBad.length
    ? `seccompProfile: pod or ${names(implicitlyBad)} must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"`
    : undefined;
}

function runAsNonRoot(pod: PodSpecLike): string | undefined {
  if (inUserNamespace(pod)) return undefined;
  const podValue = pod.securityContext?.runAsNonRoot;
  const explicitlyBad = containers(pod).filter((container) => container.securityContext?.runAsNonRoot === false);
  const setters = [...(podValue === false ? ['pod'] : []), ...(explicitlyBad.length ? [names(explicitlyBad)] : [])];
  if (setters.length)
    return `runAsNonRoot != true: ${setters.join(' and ')} must not set securityContext.runAsNonRoot=false`;
  const implicitlyBad =
    podValue === true
      ? []
      : containers(pod).filter((container) => container.securityContext?.runAsNonRoot === undefined);
  return implicitlyBad.length
    ? `runAsNonRoot != true: pod or ${names(implicitlyBad)} must set securityContext.runAsNonRoot=true`
    : undefined;
}

function runAsUser(pod: PodSpecLike): string | undefined {
  if (inUserNamespace(pod)) return undefined;
  const bad = containers(pod).filter((container) => container.securityContext?.runAsUser === 0);
  const setters = [...(pod.securityContext?.runAsUser === 0 ? ['pod'] : []), ...(bad.length ? [names(bad)] : [])];
  return setters.length ? `runAsUser=0: ${setters.join(' and ')} must not set runAsUser=0` : undefined;
}

/** What Pod Security "restricted" (and the container check of "baseline") would refuse in this pod spec. */
export function restrictedViolations(pod: PodSpecLike): string[] {
  return [privileged, allowPrivilegeEscalation, capabilities, seccompProfile, runAsNonRoot, runAsUser].flatMap(
    (check) => check(pod) ?? [],
  );
}
