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

// OpenShift's SecurityContextConstraints admission, for the user a container runs as, re-implemented for tests from
// openshift/apiserver-library-go at a8019f39f: pkg/securitycontextconstraints/sccmatching/provider.go
// CreateContainerSecurityContext (an unset runAsUser is generated by the SCC's strategy; an unset runAsNonRoot becomes
// true where the strategy is MustRunAsNonRoot and no user is set, or the user is above 0) and ValidateContainer, with
// the strategies of pkg/securitycontextconstraints/user/: mustrunasrange.go (restricted-v2: Generate gives the
// namespace range's first id, Validate requires a user within it), nonroot.go (nonroot-v2: Generate gives none,
// Validate requires runAsNonRoot or a user, never false, never 0) and runasany.go (anyuid: neither generates nor
// refuses). restricted-v2 and nonroot-v2 also set allowPrivilegeEscalation false and refuse privileged containers and
// an explicit allowPrivilegeEscalation true (OpenShift 4.11+ default SCCs); anyuid refuses privileged only. Capability
// drops, SELinux, fsGroup and volumes are left out: the guard asks for none of them.
export type Scc = 'restricted-v2' | 'nonroot-v2' | 'anyuid';

export interface UidRange {
  first: number;
  size: number;
}

export interface SccAdmission {
  /** The pod spec as the SCC admission stores it (user ids and runAsNonRoot filled in per container). */
  pod: PodSpecLike;
  /** What the SCC refuses, "<container>: <field>: <detail>" as field.ErrorList prints; empty when admitted. */
  violations: string[];
}

export function sccAdmit(pod: PodSpecLike, scc: Scc, range: UidRange): SccAdmission {
  const admitted = structuredClone(pod);
  const violations: string[] = [];
  const podContext = admitted.securityContext ?? {};
  for (const container of containers(admitted)) {
    const context = (container.securityContext ??= {});
    const prefix = `${container.name}: securityContext`;
    let runAsUser = (context.runAsUser ?? podContext.runAsUser) as number | undefined;
    if (runAsUser === undefined && scc === 'restricted-v2') context.runAsUser = runAsUser = range.first;
    let runAsNonRoot = (context.runAsNonRoot ?? podContext.runAsNonRoot) as boolean | undefined;
    if (runAsNonRoot === undefined) {
      const nonRoot = runAsUser === undefined ? scc === 'nonroot-v2' : runAsUser > 0;
      if (nonRoot) context.runAsNonRoot = runAsNonRoot = true;
    }
    if (scc === 'restricted-v2' && runAsUser !== undefined) {
      const last = range.first + range.size - 1;
      if (runAsUser < range.first || runAsUser > last)
        violations.push(
          `${prefix}.runAsUser: Invalid value: ${runAsUser}: must be in the ranges: [${range.first}, ${last}]`,
        );
    }
    if (scc === 'nonroot-v2') {
      if (runAsNonRoot === undefined && runAsUser === undefined)
        violations.push(`${prefix}.runAsNonRoot: Required value: must be true`);
      else if (runAsNonRoot === false) violations.push(`${prefix}.runAsNonRoot: Invalid value: false: must be true`);
      else if (runAsUser === 0)
        violations.push(`${prefix}.runAsUser: Invalid value: 0: running with the root UID is forbidden`);
    }
    if (context.privileged === true)
      violations.push(`${prefix}.privileged: Invalid value: true: Privileged containers are not allowed`);
    if (scc !== 'anyuid') {
      if (context.allowPrivilegeEscalation === true)
        violations.push(
          `${prefix}.allowPrivilegeEscalation: Invalid value: true: Allowing privilege escalation for containers is not allowed`,
        );
      context.allowPrivilegeEscalation ??= false;
    }
  }
  return { pod: admitted, violations };
}

/**
 * Why the kubelet would refuse to start `container` (kubernetes/kubernetes pkg/kubelet/kuberuntime/
 * security_context_others.go verifyRunAsNonRoot), given its image's USER: with runAsNonRoot true, a user of 0 set in
 * the pod spec, or none set and an image whose user is root or not numeric. undefined when it starts.
 */
export function kubeletRefusal(pod: PodSpecLike, container: Container, imageUser: number | string): string | undefined {
  const context = container.securityContext ?? {};
  const podContext = pod.securityContext ?? {};
  if ((context.runAsNonRoot ?? podContext.runAsNonRoot) !== true) return undefined;
  const runAsUser = (context.runAsUser ?? podContext.runAsUser) as number | undefined;
  if (runAsUser !== undefined) return runAsUser === 0 ? "container's runAsUser breaks non-root policy" : undefined;
  if (typeof imageUser !== 'number')
    return `container has runAsNonRoot and image has non-numeric user (${imageUser}), cannot verify user is non-root`;
  return imageUser === 0 ? 'container has runAsNonRoot and image will run as root' : undefined;
}
