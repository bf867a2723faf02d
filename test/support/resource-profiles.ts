// The resources hook Pods come with, for tests that ask whether the guard keeps a hook from starting: the fixtures'
// own resources are few, so each fixture is also admitted with each of these profiles on every container and init
// container (test/cluster/admissibility.test.ts under real LimitRanges and Pod Security, test/golden/
// admissibility.test.ts under OpenShift's SCCs). The native sidecar profile adds a container of its own.
type Json = Record<string, unknown>;
type Requirements = { requests?: Record<string, string>; limits?: Record<string, string> };

/** The part of a pod spec a profile writes. */
export interface ProfiledPodSpec {
  containers?: Json[];
  initContainers?: Json[];
}

const both = (cpu: string, memory: string): Requirements => ({ requests: { cpu, memory }, limits: { cpu, memory } });

function setResources(spec: ProfiledPodSpec, resources: Requirements): void {
  for (const entry of [...(spec.containers ?? []), ...(spec.initContainers ?? [])])
    entry.resources = structuredClone(resources);
}

/** Each profile's name, and what it does to a pod spec (in place). */
export const PROFILES: ReadonlyArray<[string, (spec: ProfiledPodSpec) => void]> = [
  ['Guaranteed 1/1Gi', (spec) => setResources(spec, both('1', '1Gi'))],
  ['Guaranteed 200m/256Mi', (spec) => setResources(spec, both('200m', '256Mi'))],
  ['Guaranteed 20m/32Mi', (spec) => setResources(spec, both('20m', '32Mi'))],
  ['limits only 300m/300Mi', (spec) => setResources(spec, { limits: { cpu: '300m', memory: '300Mi' } })],
  ['requests only 100m/128Mi', (spec) => setResources(spec, { requests: { cpu: '100m', memory: '128Mi' } })],
  [
    'requests 50m/64Mi, limits 500m/512Mi',
    (spec) =>
      setResources(spec, { requests: { cpu: '50m', memory: '64Mi' }, limits: { cpu: '500m', memory: '512Mi' } }),
  ],
  [
    'Guaranteed 200m/256Mi and a native sidecar 50m/64Mi',
    (spec) => {
      setResources(spec, both('200m', '256Mi'));
      const sidecar = { name: 'proxy', image: 'proxy', restartPolicy: 'Always', resources: both('50m', '64Mi') };
      spec.initContainers = [sidecar, ...(spec.initContainers ?? [])];
    },
  ],
];
