// Whether a hook Job's Pods get a classic Istio or Linkerd sidecar, read as the meshes read it: Istio's webhook
// selectors and istiod's injectRequired (istio/istio 1.30.3), Linkerd's disabledByAnnotation (linkerd/linkerd2
// edge-26.8.3). Each row is one case of their source.
import { describe, expect, it } from 'vitest';
import type { NamespaceFacts } from '../../../src/core/namespaces.js';
import type { Stage } from '../../../src/core/rule.js';
import type { JobSpec, KubeObject } from '../../../src/core/types.js';
import { MESH_NAMESPACE_KEYS, meshSidecar } from '../../../src/rules/mesh-sidecar.js';
import { contextFor, hookJob } from '../../support/objects.js';

interface Case {
  namespace?: Partial<NamespaceFacts>;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  hostNetwork?: boolean;
}

function jobIn({ namespace, labels, annotations, hostNetwork }: Case): KubeObject {
  const job = hookJob();
  job.metadata!.namespace = namespace?.name ?? 'apps';
  const template = (job.spec as JobSpec).template!;
  if (labels || annotations)
    template.metadata = { ...(labels ? { labels } : {}), ...(annotations ? { annotations } : {}) };
  if (hostNetwork) template.spec!.hostNetwork = true;
  return job;
}

function run(
  testCase: Case,
  options: { stage?: Stage; config?: Record<string, string>; noSnapshot?: boolean } = {},
): { job: KubeObject; report: ReturnType<typeof meshSidecar.mutate> } {
  const job = jobIn(testCase);
  const name = job.metadata!.namespace!;
  const facts: NamespaceFacts = { name, labels: {}, annotations: {}, ...testCase.namespace };
  const namespaces = options.noSnapshot ? undefined : new Map([[name, facts]]);
  const report = meshSidecar.mutate(job, contextFor(job, { namespaces, stage: options.stage, config: options.config }));
  return { job, report };
}

/** "istio-proxy may keep this Job running (namespace apps)": what is said and who asks, without the fix text. */
function said(report: { warnings: string[] }): string[] {
  return report.warnings.map((warning) => {
    const [head] = warning.split(';');
    const who = /\((the pod template asks for it|namespace \S+ injects it)/.exec(warning)?.[1] ?? '?';
    return `${head} (${who})`;
  });
}

const ISTIO_NS = { labels: { 'istio-injection': 'enabled' } };
const LINKERD_NS = { annotations: { 'linkerd.io/inject': 'enabled' } };
const ISTIO_MAY = 'istio-proxy may keep this Job running';
const LINKERD_MAY = 'linkerd-proxy may keep this Job running';

describe('mesh-sidecar: Istio', () => {
  it.each<[string, Case, string[]]>([
    ['namespace istio-injection=enabled', { namespace: ISTIO_NS }, [`${ISTIO_MAY} (namespace apps injects it)`]],
    [
      'namespace enabled, pod label inject=false',
      { namespace: ISTIO_NS, labels: { 'sidecar.istio.io/inject': 'false' } },
      [],
    ],
    [
      'namespace enabled, pod annotation inject=false (istiod honours it)',
      { namespace: ISTIO_NS, annotations: { 'sidecar.istio.io/inject': 'false' } },
      [],
    ],
    [
      'namespace enabled, pod label true and annotation false (the label wins)',
      {
        namespace: ISTIO_NS,
        labels: { 'sidecar.istio.io/inject': 'true' },
        annotations: { 'sidecar.istio.io/inject': 'false' },
      },
      [`${ISTIO_MAY} (the pod template asks for it)`],
    ],
    [
      'namespace istio-injection=disabled, pod label inject=true (no webhook is called)',
      { namespace: { labels: { 'istio-injection': 'disabled' } }, labels: { 'sidecar.istio.io/inject': 'true' } },
      [],
    ],
    [
      'an unlabelled namespace, pod label inject=true',
      { labels: { 'sidecar.istio.io/inject': 'true' } },
      [`${ISTIO_MAY} (the pod template asks for it)`],
    ],
    [
      'an unlabelled namespace, pod annotation inject=true (the annotation alone never enables)',
      { annotations: { 'sidecar.istio.io/inject': 'true' } },
      [],
    ],
    [
      'namespace istio.io/rev=canary',
      { namespace: { labels: { 'istio.io/rev': 'canary' } } },
      [`${ISTIO_MAY} (namespace apps injects it)`],
    ],
    [
      'namespace istio.io/rev, pod label inject=false',
      { namespace: { labels: { 'istio.io/rev': 'canary' } }, labels: { 'sidecar.istio.io/inject': 'false' } },
      [],
    ],
    [
      'an unlabelled namespace, pod label istio.io/rev',
      { labels: { 'istio.io/rev': 'default' } },
      [`${ISTIO_MAY} (the pod template asks for it)`],
    ],
    ['namespace enabled, hostNetwork', { namespace: ISTIO_NS, hostNetwork: true }, []],
    [
      'namespace kube-public, enabled (istiod never injects there)',
      { namespace: { ...ISTIO_NS, name: 'kube-public' } },
      [],
    ],
    [
      'namespace enabled, pod annotation nativeSidecar=true',
      { namespace: ISTIO_NS, annotations: { 'sidecar.istio.io/nativeSidecar': 'true' } },
      [],
    ],
    [
      'namespace enabled, pod annotation nativeSidecar=false',
      { namespace: ISTIO_NS, annotations: { 'sidecar.istio.io/nativeSidecar': 'false' } },
      ['istio-proxy keeps this Job running (namespace apps injects it)'],
    ],
    ['an unlabelled namespace', {}, []],
  ])('%s', (_name, testCase, expected) => {
    expect(said(run(testCase).report)).toEqual(expected);
  });

  it('says what to do, the fix first: admission warnings are cut at 120 characters', () => {
    expect(run({ namespace: ISTIO_NS }).report.warnings).toEqual([
      'istio-proxy may keep this Job running; pod label sidecar.istio.io/inject=false fixes it (namespace apps injects it; a native sidecar would not: annotation sidecar.istio.io/nativeSidecar=true)',
    ]);
  });
});

describe('mesh-sidecar: Linkerd', () => {
  it.each<[string, Case, string[]]>([
    ['namespace linkerd.io/inject=enabled', { namespace: LINKERD_NS }, [`${LINKERD_MAY} (namespace apps injects it)`]],
    [
      'namespace enabled, pod disabled',
      { namespace: LINKERD_NS, annotations: { 'linkerd.io/inject': 'disabled' } },
      [],
    ],
    [
      'no namespace annotation, pod enabled',
      { annotations: { 'linkerd.io/inject': 'enabled' } },
      [`${LINKERD_MAY} (the pod template asks for it)`],
    ],
    [
      'no namespace annotation, pod ingress',
      { annotations: { 'linkerd.io/inject': 'ingress' } },
      [`${LINKERD_MAY} (the pod template asks for it)`],
    ],
    [
      'namespace disabled, pod enabled (the pod wins)',
      {
        namespace: { annotations: { 'linkerd.io/inject': 'disabled' } },
        annotations: { 'linkerd.io/inject': 'enabled' },
      },
      [`${LINKERD_MAY} (the pod template asks for it)`],
    ],
    [
      'namespace enabled, an invalid pod value (disables)',
      { namespace: LINKERD_NS, annotations: { 'linkerd.io/inject': 'yes' } },
      [],
    ],
    ['a label linkerd.io/inject does nothing', { labels: { 'linkerd.io/inject': 'enabled' } }, []],
    [
      'namespace enabled but labelled config.linkerd.io/admission-webhooks=disabled',
      { namespace: { ...LINKERD_NS, labels: { 'config.linkerd.io/admission-webhooks': 'disabled' } } },
      [],
    ],
    [
      'namespace cert-manager, enabled (outside the webhook by default)',
      { namespace: { ...LINKERD_NS, name: 'cert-manager' } },
      [],
    ],
    [
      'namespace enabled with native sidecars on (a default for its pods)',
      {
        namespace: {
          annotations: { 'linkerd.io/inject': 'enabled', 'config.linkerd.io/proxy-enable-native-sidecar': 'true' },
        },
      },
      [],
    ],
    [
      'namespace native on, pod native off (the pod wins)',
      {
        namespace: {
          annotations: { 'linkerd.io/inject': 'enabled', 'config.linkerd.io/proxy-enable-native-sidecar': 'true' },
        },
        annotations: { 'config.linkerd.io/proxy-enable-native-sidecar': 'false' },
      },
      ['linkerd-proxy keeps this Job running (namespace apps injects it)'],
    ],
    [
      'pod beta native annotation "true"',
      { namespace: LINKERD_NS, annotations: { 'config.beta.linkerd.io/proxy-enable-native-sidecar': 'true' } },
      [],
    ],
    [
      'pod alpha native annotation "T" (Go ParseBool)',
      { namespace: LINKERD_NS, annotations: { 'config.alpha.linkerd.io/proxy-enable-native-sidecar': 'T' } },
      [],
    ],
    [
      'GA native "false" wins over beta "true"',
      {
        namespace: LINKERD_NS,
        annotations: {
          'config.linkerd.io/proxy-enable-native-sidecar': 'false',
          'config.beta.linkerd.io/proxy-enable-native-sidecar': 'true',
        },
      },
      ['linkerd-proxy keeps this Job running (namespace apps injects it)'],
    ],
    [
      'an unparsable native value: the mesh default',
      { namespace: LINKERD_NS, annotations: { 'config.linkerd.io/proxy-enable-native-sidecar': 'yes' } },
      [`${LINKERD_MAY} (namespace apps injects it)`],
    ],
    ['namespace enabled, hostNetwork', { namespace: LINKERD_NS, hostNetwork: true }, []],
  ])('%s', (_name, testCase, expected) => {
    expect(said(run(testCase).report)).toEqual(expected);
  });
});

// injectRequired's reading of the pod's own value: Istio up to 1.26 lowercases it (y/yes/true/on inject, "" is the
// default, anything else does not); from 1.27 (istio#56737) only "true"/"false" count, anything else is the default.
describe('mesh-sidecar: Istio, the pod’s own sidecar.istio.io/inject value', () => {
  const exclude = { 'rules.meshSidecar.action': 'exclude' };

  it.each<[string, Case]>([
    ['label Yes', { labels: { 'sidecar.istio.io/inject': 'Yes' } }],
    ['label ON', { labels: { 'sidecar.istio.io/inject': 'ON' } }],
    ['label y', { labels: { 'sidecar.istio.io/inject': 'y' } }],
    ['annotation TRUE', { annotations: { 'sidecar.istio.io/inject': 'TRUE' } }],
    ['annotation yes', { annotations: { 'sidecar.istio.io/inject': 'yes' } }],
  ])('%s is the author’s opt-in: named as theirs, never overwritten, even with action exclude', (_name, pod) => {
    const { job, report } = run({ namespace: ISTIO_NS, ...pod }, { config: exclude });
    expect(report.mutations).toEqual([]);
    expect(said(report)).toEqual([`${ISTIO_MAY} (the pod template asks for it)`]);
    expect((job.spec as JobSpec).template?.metadata).toEqual({ ...pod });
  });

  it.each([['no'], ['False'], ['off'], ['disabled']])(
    'label %j: Istio 1.26 does not inject, 1.27+ lets the namespace decide: "may", and the value is left as written',
    (value) => {
      const labels = { 'sidecar.istio.io/inject': value };
      const { job, report } = run({ namespace: ISTIO_NS, labels }, { config: exclude });
      expect(report).toEqual({
        mutations: [],
        warnings: [
          `${ISTIO_MAY}; pod label sidecar.istio.io/inject=false fixes it (Istio 1.27+ reads sidecar.istio.io/inject="${value}" as unset; a native sidecar would not: annotation sidecar.istio.io/nativeSidecar=true)`,
        ],
      });
      expect((job.spec as JobSpec).template?.metadata).toEqual({ labels });
    },
  );

  it('an empty label is the default, and wins over the annotation as in injectRequired', () => {
    const { job, report } = run(
      {
        namespace: ISTIO_NS,
        labels: { 'sidecar.istio.io/inject': '' },
        annotations: { 'sidecar.istio.io/inject': 'false' },
      },
      { config: exclude },
    );
    expect((job.spec as JobSpec).template?.metadata?.labels).toEqual({ 'sidecar.istio.io/inject': 'false' });
    expect(report.mutations).toHaveLength(1);
  });

  it('a yes-like label without a namespace that injects calls no webhook: only "true" is selected', () => {
    expect(run({ labels: { 'sidecar.istio.io/inject': 'yes' } }).report).toEqual({ mutations: [], warnings: [] });
    expect(said(run({ labels: { 'sidecar.istio.io/inject': 'true' } }).report)).toEqual([
      `${ISTIO_MAY} (the pod template asks for it)`,
    ]);
  });
});

describe('mesh-sidecar: settings and stages', () => {
  it.each([
    ['unknown', [`${ISTIO_MAY} (namespace apps injects it)`]],
    ['no', ['istio-proxy keeps this Job running (namespace apps injects it)']],
    ['yes', []],
  ])('nativeSidecars %s', (nativeSidecars, expected) => {
    const { report } = run({ namespace: ISTIO_NS }, { config: { 'rules.meshSidecar.nativeSidecars': nativeSidecars } });
    expect(said(report)).toEqual(expected);
  });

  it('action off says nothing', () => {
    expect(run({ namespace: ISTIO_NS }, { config: { 'rules.meshSidecar.action': 'off' } }).report).toEqual({
      mutations: [],
      warnings: [],
    });
  });

  it.each([
    [
      'Istio: a pod label',
      ISTIO_NS,
      { labels: { 'sidecar.istio.io/inject': 'false' } },
      'set pod label sidecar.istio.io/inject=false: istio-proxy may keep this Job running (namespace apps injects it; a native sidecar would not: annotation sidecar.istio.io/nativeSidecar=true)',
    ],
    [
      'Linkerd: a pod annotation',
      LINKERD_NS,
      { annotations: { 'linkerd.io/inject': 'disabled' } },
      'set pod annotation linkerd.io/inject=disabled: linkerd-proxy may keep this Job running (namespace apps injects it; a native sidecar would not: annotation config.linkerd.io/proxy-enable-native-sidecar=true)',
    ],
  ])(
    'action exclude takes the Job out of injection the namespace asks for (%s)',
    (_name, namespace, metadata, message) => {
      const { job, report } = run({ namespace }, { config: { 'rules.meshSidecar.action': 'exclude' } });
      expect((job.spec as JobSpec).template?.metadata).toEqual(metadata);
      expect(report).toEqual({ mutations: [message], warnings: [] });
      // Applied again, it finds the Job excluded and says nothing.
      expect(run({ namespace, ...metadata }, { config: { 'rules.meshSidecar.action': 'exclude' } }).report).toEqual({
        mutations: [],
        warnings: [],
      });
    },
  );

  it('action exclude keeps the labels the template has, and leaves a sidecar the template asks for (the author chose it)', () => {
    const exclude = { 'rules.meshSidecar.action': 'exclude' };
    const kept = run({ namespace: ISTIO_NS, labels: { app: 'migrate' } }, { config: exclude });
    expect((kept.job.spec as JobSpec).template?.metadata?.labels).toEqual({
      app: 'migrate',
      'sidecar.istio.io/inject': 'false',
    });
    const asked = run({ namespace: LINKERD_NS, annotations: { 'linkerd.io/inject': 'enabled' } }, { config: exclude });
    expect((asked.job.spec as JobSpec).template?.metadata?.annotations).toEqual({ 'linkerd.io/inject': 'enabled' });
    expect(said(asked.report)).toEqual([`${LINKERD_MAY} (the pod template asks for it)`]);
  });

  it('at admission, says nothing until the namespace watch has synced, even when the template asks', () => {
    const testCase = { labels: { 'sidecar.istio.io/inject': 'true' } };
    expect(run(testCase, { noSnapshot: true }).report).toEqual({ mutations: [], warnings: [] });
  });

  it('at render time (no namespace known), reports only what the pod template asks for', () => {
    expect(
      said(run({ labels: { 'sidecar.istio.io/inject': 'true' } }, { stage: 'render', noSnapshot: true }).report),
    ).toEqual([`${ISTIO_MAY} (the pod template asks for it)`]);
    expect(run({}, { stage: 'render', noSnapshot: true }).report).toEqual({ mutations: [], warnings: [] });
  });

  it('declares the namespace keys it reads, for the watch to keep', () => {
    expect(MESH_NAMESPACE_KEYS).toEqual({
      labels: ['istio-injection', 'istio.io/rev', 'config.linkerd.io/admission-webhooks'],
      annotations: [
        'linkerd.io/inject',
        'config.linkerd.io/proxy-enable-native-sidecar',
        'config.alpha.linkerd.io/proxy-enable-native-sidecar',
      ],
    });
  });
});
