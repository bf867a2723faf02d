import { describe, expect, it } from 'vitest';
import { loadFixtures } from '../support/fixtures.js';
import { assertValidKubeObject, stripNullFields } from '../support/k8s-schema.js';

describe('assertValidKubeObject on the real fixtures', () => {
  const fixtures = loadFixtures();

  it.each(fixtures)('$file validates', ({ object }) => {
    expect(() => assertValidKubeObject(object)).not.toThrow();
  });

  it('accepts Helm-rendered nulls (kyverno `imagePullPolicy: `) like the API server does', () => {
    const { object } = fixtures.find(({ file }) => file === 'kyverno-remove-configmap.yaml')!;
    const obj = object as unknown as {
      spec: { template: { spec: { containers: Array<Record<string, unknown>> } } };
    };
    // Guard: the fixture really contains the explicit null we care about.
    expect(obj.spec.template.spec.containers[0]).toHaveProperty('imagePullPolicy', null);
    expect(() => assertValidKubeObject(obj)).not.toThrow();
    // ...and validation does not mutate its input.
    expect(obj.spec.template.spec.containers[0]).toHaveProperty('imagePullPolicy', null);
  });
});

// ---------------------------------------------------------------------------
// Self-contained objects (no fixtures needed)

// Loose typing on purpose: the table below builds deliberately broken objects.
type Obj = Record<string, any>;

function baseJob(): Obj {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: 'rel-cleanup',
      namespace: 'demo',
      annotations: { 'helm.sh/hook': 'post-delete' },
    },
    spec: {
      backoffLimit: 1,
      ttlSecondsAfterFinished: 60,
      template: {
        spec: {
          restartPolicy: 'Never',
          containers: [
            {
              name: 'cleanup',
              image: 'bitnami/kubectl:1.32.3',
              command: ['/bin/sh', '-c'],
              args: ['kubectl delete configmap rel-state -n demo\necho done'],
              securityContext: { runAsNonRoot: true, capabilities: { drop: ['ALL'] } },
              resources: { limits: { cpu: '100m', memory: '64Mi' } },
            },
          ],
        },
      },
    },
  };
}

function basePod(): Obj {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { generateName: 'hook-', annotations: { 'argocd.argoproj.io/hook': 'Sync' } },
    spec: { restartPolicy: 'Never', containers: [{ name: 'main', image: 'alpine:3.20', command: ['true'] }] },
  };
}

describe('assertValidKubeObject on hand-made objects', () => {
  it('accepts the valid base Job and Pod', () => {
    expect(() => assertValidKubeObject(baseJob())).not.toThrow();
    expect(() => assertValidKubeObject(basePod())).not.toThrow();
  });

  it('accepts null-valued fields, including enum fields (the API server drops them)', () => {
    const j = baseJob();
    const c = j.spec.template.spec.containers[0];
    c.imagePullPolicy = null;
    c.resources = null;
    j.spec.template.spec.restartPolicy = null;
    j.spec.template.spec.nodeSelector = null;
    expect(() => assertValidKubeObject(j)).not.toThrow();
  });

  it('stripNullFields drops null properties but keeps null array items and does not mutate', () => {
    const input = { a: null, b: { c: null, d: 1 }, e: [null, { f: null }] };
    expect(stripNullFields(input)).toEqual({ b: { d: 1 }, e: [null, {}] });
    expect(input).toEqual({ a: null, b: { c: null, d: 1 }, e: [null, { f: null }] });
  });

  // [description, base, mutation, expected "<path>: <message>" fragments]
  const broken: Array<[string, () => Obj, (o: Obj) => void, string[]]> = [
    [
      'container without name',
      baseJob,
      (o) => delete o.spec.template.spec.containers[0].name,
      ['/spec/template/spec/containers/0: must have required property name'],
    ],
    ['backoffLimit as a string', baseJob, (o) => (o.spec.backoffLimit = '3'), ['/spec/backoffLimit: must be integer']],
    // What hook-deadline, mesh-sidecar and hook-pod-restart-policy write, gone wrong.
    [
      'activeDeadlineSeconds as a string',
      baseJob,
      (o) => (o.spec.activeDeadlineSeconds = '3600'),
      ['/spec/activeDeadlineSeconds: must be integer'],
    ],
    [
      'a pod template label that is not a string',
      baseJob,
      (o) => (o.spec.template.metadata = { labels: { 'sidecar.istio.io/inject': false } }),
      ['/spec/template/metadata/labels/sidecar.istio.io~1inject: must be string'],
    ],
    [
      'a restartPolicy the API does not know',
      basePod,
      (o) => (o.spec.restartPolicy = 'never'),
      ['/spec/restartPolicy: must be equal to one of the allowed values'],
    ],
    [
      'backoffLimit not an integer',
      baseJob,
      (o) => (o.spec.backoffLimit = 2.5),
      ['/spec/backoffLimit: must be integer'],
    ],
    [
      'ttlSecondsAfterFinished as a string',
      baseJob,
      (o) => (o.spec.ttlSecondsAfterFinished = '60'),
      ['/spec/ttlSecondsAfterFinished: must be integer'],
    ],
    [
      'initContainers not an array',
      baseJob,
      (o) => (o.spec.template.spec.initContainers = { name: 'init', image: 'busybox' }),
      ['/spec/template/spec/initContainers: must be array'],
    ],
    [
      'init container without name',
      baseJob,
      (o) => (o.spec.template.spec.initContainers = [{ image: 'busybox', command: ['true'] }]),
      ['/spec/template/spec/initContainers/0: must have required property name'],
    ],
    [
      'securityContext.runAsNonRoot as a string',
      baseJob,
      (o) => (o.spec.template.spec.containers[0].securityContext.runAsNonRoot = 'yes'),
      ['/spec/template/spec/containers/0/securityContext/runAsNonRoot: must be boolean'],
    ],
    [
      'securityContext.runAsUser as a string, next to an unknown field',
      baseJob,
      (o) => {
        o.spec.template.spec.containers[0].securityContext.runAsUser = '1000';
        o.spec.template.spec.containers[0].securityContext.notAField = true;
      },
      ['/spec/template/spec/containers/0/securityContext/runAsUser: must be integer'],
    ],
    [
      'securityContext.capabilities.drop not an array',
      baseJob,
      (o) => (o.spec.template.spec.containers[0].securityContext.capabilities.drop = 'ALL'),
      ['/spec/template/spec/containers/0/securityContext/capabilities/drop: must be array'],
    ],
    [
      'command as a string',
      baseJob,
      (o) => (o.spec.template.spec.containers[0].command = '/bin/sh -c'),
      ['/spec/template/spec/containers/0/command: must be array'],
    ],
    [
      'null item inside args',
      baseJob,
      (o) => (o.spec.template.spec.containers[0].args = [null]),
      ['/spec/template/spec/containers/0/args/0: must be string'],
    ],
    [
      'imagePullPolicy with wrong case',
      baseJob,
      (o) => (o.spec.template.spec.containers[0].imagePullPolicy = 'always'),
      ['/spec/template/spec/containers/0/imagePullPolicy: must be equal to one of the allowed values'],
    ],
    [
      'restartPolicy not in the enum',
      baseJob,
      (o) => (o.spec.template.spec.restartPolicy = 'Sometimes'),
      ['/spec/template/spec/restartPolicy: must be equal to one of the allowed values'],
    ],
    [
      'env entry without name',
      baseJob,
      (o) => (o.spec.template.spec.containers[0].env = [{ value: 'x' }]),
      ['/spec/template/spec/containers/0/env/0: must have required property name'],
    ],
    [
      'resource quantity that is an object',
      baseJob,
      (o) => (o.spec.template.spec.containers[0].resources.limits.cpu = { m: 100 }),
      ['/spec/template/spec/containers/0/resources/limits/cpu:'],
    ],
    [
      'annotation value that is a number',
      baseJob,
      (o) => (o.metadata.annotations['helm.sh/hook-weight'] = 5),
      ['/metadata/annotations/helm.sh~1hook-weight: must be string'],
    ],
    ['Job without template', baseJob, (o) => delete o.spec.template, ['/spec: must have required property template']],
    [
      'several errors at once are all listed',
      baseJob,
      (o) => {
        o.spec.backoffLimit = '3';
        delete o.spec.template.spec.containers[0].name;
      },
      ['/spec/backoffLimit: must be integer', '/spec/template/spec/containers/0: must have required property name'],
    ],
    [
      'Pod without containers',
      basePod,
      (o) => delete o.spec.containers,
      ['/spec: must have required property containers'],
    ],
    [
      'Pod container without name',
      basePod,
      (o) => delete o.spec.containers[0].name,
      ['/spec/containers/0: must have required property name'],
    ],
    ['Pod with spec not an object', basePod, (o) => (o.spec = []), ['/spec: must be object']],
  ];

  it.each(broken)('rejects: %s', (_desc, base, mutate, expected) => {
    const obj = base();
    mutate(obj);
    let message = '';
    try {
      assertValidKubeObject(obj);
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message, 'expected assertValidKubeObject to throw').not.toBe('');
    expect(message).toContain('not valid against the Kubernetes schema');
    for (const fragment of expected) expect(message).toContain(fragment);
  });

  const unsupported: Array<[string, unknown]> = [
    [
      'Ingress (nothing of ours makes one)',
      { apiVersion: 'networking.k8s.io/v1', kind: 'Ingress', metadata: { name: 'x' } },
    ],
    [
      'Deployment with an old apiVersion',
      { apiVersion: 'extensions/v1beta1', kind: 'Deployment', metadata: { name: 'x' } },
    ],
    ['Job with another apiVersion', { ...baseJob(), apiVersion: 'batch/v1beta1' }],
    ['object without kind', { apiVersion: 'v1', metadata: { name: 'x' } }],
    ['null', null],
    ['an array', [baseJob()]],
    ['a string', 'kind: Job'],
  ];

  it.each(unsupported)('rejects %s as unsupported kind', (_desc, obj) => {
    expect(() => assertValidKubeObject(obj)).toThrow(/unsupported kind/);
  });

  // Documents a limitation so nobody relies on it: the OpenAPI schemas in
  // kubernetes-models do not forbid unknown fields.
  it('does NOT reject unknown fields on their own (schema limitation)', () => {
    const j = baseJob();
    j.spec.template.spec.containers[0].securityContext.notAField = true;
    j.spec.notAFieldEither = 'x';
    expect(() => assertValidKubeObject(j)).not.toThrow();
  });
});
