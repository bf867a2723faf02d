import { describe, expect, it } from 'vitest';
import { decisionContext } from '../../../src/config/decision-context.js';
import { loadConfig } from '../../../src/config/load.js';
import { decide } from '../../../src/core/decide.js';
import type { KubeObject } from '../../../src/core/types.js';
import { writeFileSync } from 'node:fs';
import { withHelmControllers } from '../../../src/core/context.js';
import { CRASHING_HELM_CONTROLLERS, hookOutputLogPolicy } from '../../../src/rules/hook-output-log-policy.js';
import { ARGOCD_CONTROLLER, contextFor, hookJob, hookPod } from '../../support/objects.js';

const POLICY = 'helm.sh/hook-output-log-policy';
const SET = `set ${POLICY}: hook-failed: Helm prints the hook's logs if it fails`;

const BEFORE_HOOK_CREATION = { 'helm.sh/hook': 'pre-install', 'helm.sh/hook-delete-policy': 'before-hook-creation' };

/** A CREATE of `object` by a Helm user, as decide() reads it. */
function helmCreate(object: KubeObject) {
  return { uid: 'u', operation: 'CREATE', namespace: 'apps', userInfo: { username: 'kubernetes-admin' }, object };
}

describe('hook-output-log-policy', () => {
  it.each([
    ['a Helm hook Job, Helm unknown', hookJob({ 'helm.sh/hook': 'pre-install' }), {}],
    ['a Helm hook Job under Helm 4.1.4', hookJob({ 'helm.sh/hook': 'pre-upgrade' }), { 'helm.version': '4.1.4' }],
    [
      'a Helm hook Job under Helm 3.18.0, the first to read it',
      hookJob({ 'helm.sh/hook': 'post-install' }),
      { 'helm.version': '3.18.0' },
    ],
    ['a bare Helm hook Pod', hookPod({ 'helm.sh/hook': 'post-delete' }), { 'helm.version': '4.2.4' }],
  ])('gives hook-failed to %s', (_name, object, config) => {
    const before = structuredClone(object.metadata?.annotations);
    const report = hookOutputLogPolicy.mutate(object, contextFor(object, { stage: 'render', config }));
    expect(object.metadata?.annotations).toEqual({ ...before, [POLICY]: 'hook-failed' });
    expect(report).toEqual({ mutations: [SET], warnings: [] });
  });

  it.each([
    ['a policy the chart set', hookJob({ 'helm.sh/hook': 'pre-install', [POLICY]: 'hook-succeeded' }), undefined, {}],
    ['an empty policy the chart set', hookJob({ 'helm.sh/hook': 'pre-install', [POLICY]: '' }), undefined, {}],
    [
      'Helm 3.17.0, which never reads it',
      hookJob({ 'helm.sh/hook': 'pre-install' }),
      undefined,
      { 'helm.version': '3.17.0' },
    ],
    [
      'an Argo CD hook (Argo CD never reads it)',
      hookJob({ 'argocd.argoproj.io/hook': 'PreSync' }),
      ARGOCD_CONTROLLER,
      {},
    ],
    ['a Helm hook Argo CD applies', hookJob({ 'helm.sh/hook': 'pre-install' }), ARGOCD_CONTROLLER, {}],
    ['a Helm test hook (helm test --logs prints it)', hookPod({ 'helm.sh/hook': 'test' }), undefined, {}],
  ])('leaves alone %s', (_name, object, username, config) => {
    const before = structuredClone(object);
    const report = hookOutputLogPolicy.mutate(object, contextFor(object, { stage: 'render', username, config }));
    expect(report).toEqual({ mutations: [], warnings: [] });
    expect(object).toEqual(before);
  });

  it('is idempotent', () => {
    const job = hookJob({ 'helm.sh/hook': 'pre-install' });
    hookOutputLogPolicy.mutate(job, contextFor(job, { stage: 'render' }));
    const once = structuredClone(job);
    expect(hookOutputLogPolicy.mutate(job, contextFor(job, { stage: 'render' })).mutations).toEqual([]);
    expect(job).toEqual(once);
  });

  it.each([
    ['on', {}, [{ op: 'add', path: '/metadata/annotations/helm.sh~1hook-output-log-policy', value: 'hook-failed' }]],
    ['off', { 'rules.hookOutputLogPolicy.enabled': 'false' }, []],
  ] as const)('is switched %s by rules.hookOutputLogPolicy.enabled', (_name, overrides, expected) => {
    const request = helmCreate(hookJob(BEFORE_HOOK_CREATION));
    const context = decisionContext(loadConfig({ overrides }), undefined, 'render');
    const patch = decide(request, 'mutate', context).patch;
    expect(patch.filter((op) => op.path.includes('output-log'))).toEqual(expected);
  });

  // Helm reads it from the rendered manifest, never from the live object: nothing is written at admission.
  it.each([
    ['admission', []],
    ['render', [{ op: 'add', path: '/metadata/annotations/helm.sh~1hook-output-log-policy', value: 'hook-failed' }]],
  ] as const)('takes effect at render time only: at %s', (stage, expected) => {
    const request = helmCreate(hookPod(BEFORE_HOOK_CREATION));
    const patch = decide(request, 'mutate', decisionContext(loadConfig(), undefined, stage)).patch;
    expect(patch.filter((op) => op.path.includes('output-log'))).toEqual(expected);
  });
});

// fluxcd/helm-controller#1562: helm-controller 1.4.0 and later crash on the annotation (advisory
// flux-helm-controller-hook-output-crash). No configuration makes the rule add it for one of them.
describe('hook-output-log-policy under Flux', () => {
  const FLUX_LABELS = { 'helm.toolkit.fluxcd.io/name': 'podinfo', 'helm.toolkit.fluxcd.io/namespace': 'flux-apps' };
  const NOT_SET = `helm-controller#1562: ${POLICY} not set: Flux helm-controller 1.6.3 crashes on it (SIGSEGV) when the hook's outcome matches the policy, and the release is left pending`;

  it('keeps the advisory and the rule on the same helm-controllers', () => {
    const advisory = loadConfig().advisories.find((each) => each.id === 'flux-helm-controller-hook-output-crash');
    expect(advisory).toMatchObject({
      tool: 'helm-controller',
      affected: CRASHING_HELM_CONTROLLERS,
      warnedBy: ['hook-output-log-policy', 'flux-hook-output-crash'],
    });
    expect(advisory?.fixed).toBeUndefined();
  });

  it('adds nothing for helm-controller 1.6.3 and says why', () => {
    const job = hookJob({ 'helm.sh/hook': 'pre-upgrade' });
    const before = structuredClone(job);
    const report = hookOutputLogPolicy.mutate(
      job,
      contextFor(job, { stage: 'render', config: { 'flux.helmControllerVersion': 'v1.6.3' } }),
    );
    expect(report).toEqual({ mutations: [], warnings: [NOT_SET] });
    expect(job).toEqual(before);
  });

  it('warns of a policy the chart set, and keeps it', () => {
    const job = hookJob({ 'helm.sh/hook': 'pre-upgrade', [POLICY]: 'hook-failed' });
    const report = hookOutputLogPolicy.mutate(
      job,
      contextFor(job, { stage: 'render', config: { 'flux.helmControllerVersion': '1.4.0' } }),
    );
    expect(report.warnings).toEqual([
      `helm-controller#1562: ${POLICY}: hook-failed is set, and Flux helm-controller 1.4.0 crashes on it (SIGSEGV) when the hook's outcome matches the policy, and the release is left pending: remove it from the chart`,
    ]);
    expect(job.metadata?.annotations?.[POLICY]).toBe('hook-failed');
  });

  it('adds it for helm-controller 1.3.2 (helm 3.17, which never reads it)', () => {
    const job = hookJob({ 'helm.sh/hook': 'pre-upgrade' });
    const report = hookOutputLogPolicy.mutate(
      job,
      contextFor(job, { stage: 'render', config: { 'flux.helmControllerVersion': '1.3.2' } }),
    );
    expect(report).toEqual({ mutations: [SET], warnings: [] });
  });

  // Every configuration that could plausibly turn the annotation back on, for every affected helm-controller.
  const CONFIGS: Record<string, string>[] = [
    {},
    { mode: 'audit' },
    { 'helm.version': '4.2.4' },
    { 'helm.version': '3.18.0' },
    { 'rules.hookOutputLogPolicy.enabled': 'false' },
    { 'rules.deletePolicy.enabled': 'false' },
  ];
  const VERSIONS = ['1.4.0', '1.4.5', '1.5.0', '1.6.0', '1.6.3', '1.7.0', '2.0.0-rc.1'];
  it.each(VERSIONS.flatMap((version) => CONFIGS.map((config) => [version, config] as const)))(
    'no configuration adds it for helm-controller %s (%o): decide, the patch sent or withheld',
    (version, config) => {
      for (const object of [hookJob(BEFORE_HOOK_CREATION), hookPod(BEFORE_HOOK_CREATION)]) {
        const context = decisionContext(
          loadConfig({ overrides: { ...config, 'flux.helmControllerVersion': version } }),
          undefined,
          'render',
        );
        const decision = decide(helmCreate(object), 'mutate', context);
        const ops = [...decision.patch, ...decision.withheldPatch];
        expect(ops.filter((op) => op.path.includes('output-log'))).toEqual([]);
      }
    },
  );

  it('a config narrowing the advisory does not turn it back on', () => {
    const file = `${process.env.TMPDIR ?? '/tmp'}/hookguard-flux-${process.pid}.yaml`;
    writeFileSync(
      file,
      'advisories:\n  - id: flux-helm-controller-hook-output-crash\n    disabled: true\nflux:\n  helmControllerVersion: 1.6.3\n',
    );
    const context = decisionContext(loadConfig({ file }), undefined, 'render');
    const patch = decide(helmCreate(hookJob(BEFORE_HOOK_CREATION)), 'mutate', context).patch;
    expect(patch.filter((op) => op.path.includes('output-log'))).toEqual([]);
  });

  it('warns at admission of a Flux hook carrying it under helm-controller 1.6.3, naming the advisory', () => {
    const pod = hookPod({ 'helm.sh/hook': 'pre-upgrade', [POLICY]: 'hook-failed' });
    pod.metadata!.labels = FLUX_LABELS;
    const context = decisionContext(loadConfig({ overrides: { 'flux.helmControllerVersion': '1.6.3' } }));
    const decision = decide(helmCreate(pod), 'mutate', context);
    expect(decision.findings.filter((finding) => finding.rule === 'flux-hook-output-crash')).toEqual([
      {
        rule: 'flux-hook-output-crash',
        action: 'warn',
        advisory: 'flux-helm-controller-hook-output-crash',
        message: `helm-controller#1562: Flux helm-controller 1.6.3 crashes on ${POLICY}: hook-failed (SIGSEGV) if the hook's outcome matches; HelmRelease flux-apps/podinfo is then left pending`,
      },
    ]);
    expect(decision.warnings).toContain(
      'hookguard [flux-hook-output-crash]: helm-controller#1562: Flux helm-controller 1.6.3 crashes on helm.sh/hook-output-log…',
    );
    expect(decision.patch.filter((op) => op.path.includes('output-log'))).toEqual([]);
  });

  it.each([
    ['no Flux labels', {}, { 'flux.helmControllerVersion': '1.6.3' }, true],
    ['no helm-controller known', FLUX_LABELS, {}, true],
    ['helm-controller 1.3.2', FLUX_LABELS, { 'flux.helmControllerVersion': '1.3.2' }, true],
    ['no annotation', FLUX_LABELS, { 'flux.helmControllerVersion': '1.6.3' }, false],
  ])('says nothing at admission with %s', (_name, labels, overrides, annotated) => {
    const pod = hookPod({ 'helm.sh/hook': 'pre-upgrade', ...(annotated ? { [POLICY]: 'hook-failed' } : {}) });
    pod.metadata!.labels = labels;
    const decision = decide(helmCreate(pod), 'mutate', decisionContext(loadConfig({ overrides })));
    expect(decision.findings.filter((finding) => finding.rule === 'flux-hook-output-crash')).toEqual([]);
  });

  it('warns at admission when a discovered helm-controller has an unknown version', () => {
    const pod = hookPod({ 'helm.sh/hook': 'pre-upgrade', [POLICY]: 'hook-failed' });
    pod.metadata!.labels = FLUX_LABELS;
    const context = withHelmControllers(decisionContext(loadConfig()), { versions: [], unknownVersion: true });
    const [finding] = decide(helmCreate(pod), 'mutate', context).findings.filter(
      (each) => each.rule === 'flux-hook-output-crash',
    );
    expect(finding?.message).toMatch(/^helm-controller#1562: a Flux helm-controller of unknown version crashes on /);
  });
});
