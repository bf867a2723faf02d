// The test support that plays the API server's part for a Pod's resources (test/support/limit-ranger.ts) and for
// Pod Security (test/support/pod-security.ts), checked against what Kubernetes' source does, messages included
// (the sources are named in those files; the behaviours are the ones /work/notes/research-k8s.md A, B, C quotes).
import { describe, expect, it } from 'vitest';
import {
  admitPod,
  podTotals,
  qosClass,
  storedLimitRange,
  type LimitRange,
  type SimPodSpec,
} from '../support/limit-ranger.js';
import { restrictedViolations } from '../support/pod-security.js';

type Resources = { requests?: Record<string, string>; limits?: Record<string, string> };

const container = (name: string, resources?: Resources, extra: Record<string, unknown> = {}) => ({
  name,
  image: 'app',
  ...(resources ? { resources } : {}),
  ...extra,
});
const pod = (containers: ReturnType<typeof container>[], initContainers: ReturnType<typeof container>[] = []) => ({
  containers,
  ...(initContainers.length ? { initContainers } : {}),
});
const limitRange = (...limits: LimitRange['limits']): LimitRange => ({ name: 'lr', limits });
const resourcesOf = (spec: SimPodSpec, list: 'containers' | 'initContainers', index = 0) =>
  spec[list]?.[index]?.resources;

describe('LimitRange defaulting as stored (SetDefaults_LimitRangeItem)', () => {
  it('defaults the limit to max, the request to the limit, else to min; Pod items get none', () => {
    expect(
      storedLimitRange(
        limitRange(
          { type: 'Container', max: { cpu: '2' }, min: { memory: '64Mi' } },
          { type: 'Pod', max: { cpu: '4' } },
        ),
      ),
    ).toEqual(
      limitRange(
        {
          type: 'Container',
          max: { cpu: '2' },
          min: { memory: '64Mi' },
          default: { cpu: '2' },
          defaultRequest: { cpu: '2', memory: '64Mi' },
        },
        { type: 'Pod', max: { cpu: '4' } },
      ),
    );
  });
});

describe('admission of a Pod', () => {
  it('applies defaults to containers and init containers alike, only where a key is missing, and says so', () => {
    const lr = limitRange({
      type: 'Container',
      default: { cpu: '300m', memory: '200Mi' },
      defaultRequest: { cpu: '200m', memory: '100Mi' },
    });
    const admitted = admitPod('p', pod([container('main', { requests: { cpu: '50m' } })], [container('init')]), [lr]);
    expect(admitted.refusal).toBeUndefined();
    expect(resourcesOf(admitted.pod, 'containers')).toEqual({
      requests: { cpu: '50m', memory: '100Mi' },
      limits: { cpu: '300m', memory: '200Mi' },
    });
    expect(resourcesOf(admitted.pod, 'initContainers')).toEqual({
      requests: { cpu: '200m', memory: '100Mi' },
      limits: { cpu: '300m', memory: '200Mi' },
    });
    expect(admitted.annotation).toBe(
      'LimitRanger plugin set: memory request for container main; cpu, memory limit for container main; ' +
        'cpu, memory request for init container init; cpu, memory limit for init container init',
    );
  });

  it('gives a container without cpu request = limit = max where only max is set', () => {
    const admitted = admitPod('p', pod([container('main')]), [limitRange({ type: 'Container', max: { cpu: '2' } })]);
    expect(resourcesOf(admitted.pod, 'containers')).toEqual({ requests: { cpu: '2' }, limits: { cpu: '2' } });
    expect(admitted.refusal).toBeUndefined();
  });

  it('copies a limit to a missing request before LimitRanger (Pod defaulting): limits alone make a Guaranteed Pod', () => {
    const admitted = admitPod('p', pod([container('main', { limits: { cpu: '100m', memory: '64Mi' } })]), [
      limitRange({ type: 'Container', defaultRequest: { cpu: '10m', memory: '8Mi' } }),
    ]);
    expect(resourcesOf(admitted.pod, 'containers')).toEqual({
      requests: { cpu: '100m', memory: '64Mi' },
      limits: { cpu: '100m', memory: '64Mi' },
    });
    expect(admitted.qos).toBe('Guaranteed');
  });

  it('refuses a request above the default limit it was given, as API validation does', () => {
    const admitted = admitPod('p', pod([container('main', { requests: { cpu: '500m' } })]), [
      limitRange({ type: 'Container', default: { cpu: '200m' } }),
    ]);
    expect(admitted.refusal).toBe(
      'spec.containers[0].resources.requests: Invalid value: "500m": must be less than or equal to cpu limit of 200m',
    );
  });

  it.each([
    [
      'a request under the minimum, in an init container too',
      pod([container('main', { requests: { cpu: '200m' } })], [container('init', { requests: { cpu: '10m' } })]),
      limitRange({ type: 'Container', min: { cpu: '100m' } }),
      'pods "p" is forbidden: minimum cpu usage per Container is 100m, but request is 10m',
    ],
    [
      'a limit under the minimum, which is also the request (Pod defaulting)',
      pod([container('main', { requests: { cpu: '100m' }, limits: { memory: '2Mi' } })]),
      limitRange({ type: 'Container', min: { memory: '4Mi' } }),
      'pods "p" is forbidden: minimum memory usage per Container is 4Mi, but request is 2Mi',
    ],
    [
      'a limit over the maximum',
      pod([container('main', { limits: { cpu: '2' } })]),
      limitRange({ type: 'Container', max: { cpu: '1' } }),
      'pods "p" is forbidden: maximum cpu usage per Container is 1, but limit is 2',
    ],
    [
      'a limit over the limit-to-request ratio (compared in milli-units)',
      pod([container('main', { requests: { cpu: '10m' }, limits: { cpu: '100m' } })]),
      limitRange({ type: 'Container', maxLimitRequestRatio: { cpu: '2' } }),
      'pods "p" is forbidden: cpu max limit to request ratio per Container is 2, but provided ratio is 10.000000',
    ],
    [
      'a ratio without a limit',
      pod([container('main', { requests: { cpu: '10m' } })]),
      limitRange({ type: 'Container', maxLimitRequestRatio: { cpu: '2' } }),
      'pods "p" is forbidden: cpu max limit to request ratio per Container is 2, but no limit is specified or limit is 0',
    ],
    [
      'a ratio without a request',
      pod([container('main')]),
      limitRange({ type: 'Container', maxLimitRequestRatio: { memory: '1' } }),
      'pods "p" is forbidden: memory max limit to request ratio per Container is 1, but no request is specified or request is 0',
    ],
    [
      'a Pod maximum no container sets a limit for',
      pod([container('main', { requests: { cpu: '10m' } })]),
      limitRange({ type: 'Pod', max: { cpu: '2' } }),
      'pods "p" is forbidden: maximum cpu usage per Pod is 2.  No limit is specified',
    ],
    [
      'a Pod minimum no container requests',
      pod([container('main')]),
      limitRange({ type: 'Pod', min: { memory: '6Mi' } }),
      'pods "p" is forbidden: minimum memory usage per Pod is 6Mi.  No request is specified',
    ],
    [
      'two errors: listed in brackets (the research note quotes this one)',
      pod([container('main', { requests: { cpu: '10m' }, limits: { memory: '2Gi' } })]),
      limitRange({ type: 'Container', min: { cpu: '100m' } }, { type: 'Pod', max: { memory: '1Gi' } }),
      'pods "p" is forbidden: [minimum cpu usage per Container is 100m, but request is 10m, maximum memory usage per Pod is 1Gi, but limit is 2Gi]',
    ],
  ])('refuses %s', (_name, spec, lr, refusal) => {
    expect(admitPod('p', spec, [lr]).refusal).toBe(refusal);
  });

  it('prints quantities as the API server does (canonical, a sum in its first term’s format)', () => {
    const spec = pod([
      container('a', { limits: { cpu: '0.5', memory: '768Mi' } }),
      container('b', { limits: { cpu: '1000m', memory: '768Mi' } }),
    ]);
    expect(admitPod('p', spec, [limitRange({ type: 'Pod', max: { cpu: '1', memory: '1Gi' } })]).refusal).toBe(
      'pods "p" is forbidden: [maximum cpu usage per Pod is 1, but limit is 1500m, maximum memory usage per Pod is 1Gi, but limit is 1536Mi]',
    );
  });

  it('lets the first LimitRange with errors refuse, after every one has set its defaults', () => {
    const spec = pod([container('main')]);
    const first = limitRange({ type: 'Container', defaultRequest: { cpu: '10m' } });
    const second = { ...limitRange({ type: 'Container', min: { cpu: '100m' } }), name: 'second' };
    expect(admitPod('p', spec, [first, second]).refusal).toBe(
      'pods "p" is forbidden: minimum cpu usage per Container is 100m, but request is 10m',
    );
  });

  it('runs a mutating webhook after LimitRanger’s defaults and before its checks: what it adds gets no defaults', () => {
    const lr = limitRange({ type: 'Container', max: { cpu: '1' } });
    const admitted = admitPod('p', pod([container('main')]), [lr], (spec) => ({
      ...spec,
      initContainers: [container('late')],
    }));
    expect(admitted.refusal).toBe(
      'pods "p" is forbidden: maximum cpu usage per Container is 1.  No limit is specified',
    );
  });
});

describe('the Pod totals LimitRanger checks (podRequests, podLimits)', () => {
  it('are the larger of the containers with the sidecars, and each init step with the sidecars before it', () => {
    const spec = pod(
      [container('main', { requests: { cpu: '100m' } })],
      [
        container('before', { requests: { cpu: '120m' } }),
        container('sidecar', { requests: { cpu: '50m' } }, { restartPolicy: 'Always' }),
        container('after', { requests: { cpu: '200m' } }),
      ],
    );
    expect(podTotals(spec, 'requests').get('cpu')?.nano).toBe(250_000_000n);
    const small = pod(spec.containers, [
      container('sidecar', { requests: { cpu: '50m' } }, { restartPolicy: 'Always' }),
      container('after', { requests: { cpu: '90m' } }),
    ]);
    expect(podTotals(small, 'requests').get('cpu')?.nano).toBe(150_000_000n);
  });

  it('contain only the keys some container sets', () => {
    const spec = pod([container('a', { requests: { cpu: '1' } }), container('b', { requests: { memory: '1Gi' } })]);
    expect([...podTotals(spec, 'limits').keys()]).toEqual([]);
    expect([...podTotals(spec, 'requests').keys()]).toEqual(['cpu', 'memory']);
  });
});

describe('QoS class (ComputePodQOS)', () => {
  const guaranteed = { requests: { cpu: '100m', memory: '64Mi' }, limits: { cpu: '100m', memory: '64Mi' } };
  it.each([
    ['no resources anywhere', pod([container('main')]), 'BestEffort'],
    ['zero quantities only', pod([container('main', { requests: { cpu: '0' } })]), 'BestEffort'],
    [
      'requests equal to limits everywhere',
      pod([container('main', guaranteed)], [container('init', guaranteed)]),
      'Guaranteed',
    ],
    [
      'requests below limits',
      pod([container('main', { requests: { cpu: '10m' }, limits: { cpu: '100m' } })]),
      'Burstable',
    ],
    ['an init container without limits', pod([container('main', guaranteed)], [container('init')]), 'Burstable'],
    [
      'a BestEffort Pod given an init container with requests equal to limits',
      pod([container('main')], [container('guard', guaranteed)]),
      'Burstable',
    ],
    ['a cpu limit alone', pod([container('main', { requests: { cpu: '1' }, limits: { cpu: '1' } })]), 'Burstable'],
  ])('%s: %s', (_name, spec, qos) => {
    expect(qosClass(spec)).toBe(qos);
  });
});

describe('Pod Security restricted (the container checks)', () => {
  const restricted = {
    allowPrivilegeEscalation: false,
    capabilities: { drop: ['ALL'] },
    runAsNonRoot: true,
    seccompProfile: { type: 'RuntimeDefault' },
  };
  it.each([
    ['a compliant container', pod([container('main', undefined, { securityContext: restricted })]), []],
    [
      'nothing set',
      pod([container('main')]),
      [
        'allowPrivilegeEscalation != false: container "main" must set securityContext.allowPrivilegeEscalation=false',
        'unrestricted capabilities: container "main" must set securityContext.capabilities.drop=["ALL"]',
        'seccompProfile: pod or container "main" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost"',
        'runAsNonRoot != true: pod or container "main" must set securityContext.runAsNonRoot=true',
      ],
    ],
    [
      'runAsNonRoot and seccomp from the pod, root in a container',
      {
        ...pod([
          container('main', undefined, {
            securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, runAsUser: 0 },
          }),
        ]),
        securityContext: { runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } },
      },
      ['runAsUser=0: container "main" must not set runAsUser=0'],
    ],
    [
      'a privileged init container',
      pod(
        [container('main', undefined, { securityContext: restricted })],
        [container('init', undefined, { securityContext: { ...restricted, privileged: true } })],
      ),
      ['privileged: container "init" must not set securityContext.privileged=true'],
    ],
  ])('%s', (_name, spec, violations) => {
    expect(restrictedViolations(spec)).toEqual(violations);
  });
});
