// The shipped rules as the config hands them to the core: their order and ids, and how they decide together.
// The engine's own logic is tested with rules of its own in test/unit/decide.test.ts.
import { describe, expect, it } from 'vitest';
import { decisionContext } from '../../../src/config/decision-context.js';
import { loadConfig } from '../../../src/config/load.js';
import { decide } from '../../../src/core/decide.js';
import type { AdmissionRequest, KubeObject } from '../../../src/core/types.js';
import { MAX_WARNING_CHARS, truncate } from '../../../src/core/warnings.js';
import { builtInRules, catalogOf } from '../../../src/rules/index.js';
import { ARGOCD_CONTROLLER, HOOK_FINALIZER, hookJob } from '../../support/objects.js';

function request(object: unknown, overrides: Partial<AdmissionRequest> = {}): AdmissionRequest {
  return {
    uid: 'u-1',
    operation: 'CREATE',
    namespace: 'apps',
    userInfo: { username: 'kubernetes-admin' },
    object,
    ...overrides,
  };
}

const enforce = decisionContext(loadConfig());
const audit = decisionContext(loadConfig({ overrides: { mode: 'audit' } }));
// At admission a hook Job without a delete policy gets a TTL; the policy itself is written at render time only.
const HOOK_TTL_OP = { op: 'add', path: '/spec/ttlSecondsAfterFinished', value: 86400 };
// termination-message-policy and hook-label: one field per container, one label.
const MESSAGE_POLICY_OP = {
  op: 'add',
  path: '/spec/template/spec/containers/0/terminationMessagePolicy',
  value: 'FallbackToLogsOnError',
};
const HOOK_LABEL_OP = { op: 'add', path: '/metadata/labels', value: { 'hookguard.io/hook': 'admitted' } };
const HOOK_JOB_OPS = [MESSAGE_POLICY_OP, HOOK_TTL_OP, HOOK_LABEL_OP];
const HOOK_TTL_MESSAGE =
  'set spec.ttlSecondsAfterFinished to 86400: no delete policy removes this Job once it succeeds. ' +
  "Fix in its chart: add helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded to the template's metadata.annotations";
// By default hook-deadline sets no deadline and names the missing one.
const DEADLINE_WARNING = 'no spec.activeDeadlineSeconds: if its Pod never starts, this hook waits forever';

describe('the built-in rule set', () => {
  it('is what the config hands to the core', () => {
    expect(decisionContext(loadConfig()).ruleSet).toBe(builtInRules);
  });

  it('lists every rule once, mutations in the order they run', () => {
    expect(catalogOf(builtInRules).map((rule) => `${rule.webhook} ${rule.operation} ${rule.id}`)).toEqual([
      'mutating CREATE delete-policy',
      'mutating CREATE hook-ttl',
      'mutating CREATE idempotent-cleanup',
      'mutating CREATE lost-delete-hook',
      'mutating CREATE foreign-finalizer',
      'mutating CREATE hook-finalizer',
      'mutating CREATE native-sidecar',
      'mutating CREATE ttl-floor',
      'mutating CREATE min-runtime',
      'mutating CREATE hook-deadline',
      'mutating CREATE hook-pod-restart-policy',
      'mutating CREATE mesh-sidecar',
      'mutating CREATE hook-sync-options',
      'mutating CREATE suspended-hook',
      'mutating CREATE hook-managed-by',
      'mutating CREATE hook-output-log-policy',
      'mutating CREATE flux-hook-output-crash',
      'mutating CREATE hook-label',
      'mutating CREATE termination-message-policy',
      'mutating UPDATE immutable-update',
      'validating CREATE version-race',
      'validating CREATE hook-pod-restart-policy',
    ]);
    expect([...builtInRules.mitigatingIds]).not.toContain('version-race');
    // An UPDATE only exists in a cluster: immutable-update has no render-time counterpart. A delete policy is read
    // from the rendered manifest only: delete-policy takes effect at render time alone.
    const atOnly = (stage: 'admission' | 'render') =>
      catalogOf(builtInRules)
        .filter((rule) => rule.stages.length === 1 && rule.stages[0] === stage)
        .map((rule) => rule.id);
    // flux-hook-output-crash warns only of hooks Flux's helm-controller rendered, already in Helm's hands.
    // The watcher's label and the kubelet's log fallback matter only to a hook that runs in a cluster.
    expect(atOnly('admission')).toEqual([
      'flux-hook-output-crash',
      'hook-label',
      'termination-message-policy',
      'immutable-update',
    ]);
    // At admission a missing restartPolicy already reads Always: only render time can deny the one the author wrote.
    // Helm reads hook-output-log-policy from the rendered manifest too.
    expect(atOnly('render')).toEqual(['delete-policy', 'hook-output-log-policy', 'hook-pod-restart-policy']);
  });

  it.each([
    [
      'a ConfigMap',
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'x', annotations: { 'helm.sh/hook': 'pre-install' } } },
    ],
    ['a Job without hook annotations', { apiVersion: 'batch/v1', kind: 'Job', metadata: { name: 'x' }, spec: {} }],
    [
      'a Deployment with a hook annotation',
      { apiVersion: 'apps/v1', kind: 'Deployment', metadata: { annotations: { 'helm.sh/hook': 'pre-install' } } },
    ],
    [
      'a hook annotation that is not a string',
      { apiVersion: 'batch/v1', kind: 'Job', metadata: { annotations: { 'helm.sh/hook': 5 } } },
    ],
    ['no object at all', undefined],
    ['a string object', 'job'],
  ])('passes %s untouched', (_name, object) => {
    expect(decide(request(object), 'mutate', enforce)).toEqual({
      allowed: true,
      mode: 'enforce',
      patch: [],
      withheldPatch: [],
      warnings: [],
      findings: [],
      reason: 'not a hook object',
      rules: [],
    });
  });

  it.each([
    ['DELETE', { operation: 'DELETE' }, 'operation DELETE'],
    ['CONNECT', { operation: 'CONNECT' }, 'operation CONNECT'],
    ['a status subresource update', { operation: 'UPDATE', subResource: 'status' }, 'subresource status'],
    ['an excluded namespace', { namespace: 'kube-system' }, 'namespace excluded'],
  ])('passes %s untouched', (_name, overrides, reason) => {
    const decision = decide(request(hookJob(), overrides), 'mutate', enforce);
    expect(decision).toMatchObject({ allowed: true, patch: [], reason });
  });

  it('patches a hook in enforce mode with exactly the diff', () => {
    const decision = decide(request(hookJob()), 'mutate', enforce);
    expect(decision).toMatchObject({
      allowed: true,
      mode: 'enforce',
      patch: HOOK_JOB_OPS,
      withheldPatch: [],
      warnings: [`hookguard [hook-deadline]: ${DEADLINE_WARNING}`],
      reason: 'mutated',
    });
    expect(decision.rules).toEqual([
      'hook-ttl',
      'idempotent-cleanup',
      'ttl-floor',
      'hook-deadline',
      'mesh-sidecar',
      'hook-sync-options',
      'suspended-hook',
      'hook-managed-by',
      'hook-label',
      'termination-message-policy',
    ]);
  });

  it('at render time writes the delete policy instead, so the Job needs no TTL (Helm 4.2.4)', () => {
    const render = decisionContext(loadConfig({ overrides: { 'helm.version': '4.2.4' } }), undefined, 'render');
    const decision = decide(request(hookJob()), 'mutate', render);
    expect(decision.patch).toEqual([
      {
        op: 'add',
        path: '/metadata/annotations/helm.sh~1hook-delete-policy',
        value: 'before-hook-creation,hook-succeeded',
      },
      { op: 'add', path: '/metadata/annotations/helm.sh~1hook-output-log-policy', value: 'hook-failed' },
    ]);
    expect(decision.rules).toEqual([
      'delete-policy',
      'hook-ttl',
      'idempotent-cleanup',
      'ttl-floor',
      'hook-deadline',
      'mesh-sidecar',
      'hook-sync-options',
      'suspended-hook',
      'hook-managed-by',
      'hook-output-log-policy',
    ]);
  });

  it('withholds the patch in audit mode and says what it would have done', () => {
    const decision = decide(request(hookJob()), 'mutate', audit);
    expect(decision).toMatchObject({
      allowed: true,
      mode: 'audit',
      patch: [],
      withheldPatch: HOOK_JOB_OPS,
      warnings: [
        truncate(`hookguard audit would change [hook-ttl]: ${HOOK_TTL_MESSAGE}`, MAX_WARNING_CHARS),
        `hookguard audit note [hook-deadline]: ${DEADLINE_WARNING}`,
        "hookguard audit would change [hook-label]: set label hookguard.io/hook: admitted: hookguard's hook watcher follows it",
        truncate(
          'hookguard audit would change [termination-message-policy]: set terminationMessagePolicy FallbackToLogsOnError on main: a failed container keeps its last log lines in its status',
          MAX_WARNING_CHARS,
        ),
      ],
      reason: 'would mutate (audit)',
    });
  });

  it('lets one object ask for audit mode', () => {
    const job = hookJob({ 'helm.sh/hook': 'pre-upgrade', 'hookguard.io/mode': 'audit' });
    expect(decide(request(job), 'mutate', enforce)).toMatchObject({
      mode: 'audit',
      patch: [],
      withheldPatch: HOOK_JOB_OPS,
    });
  });

  it('honours hookguard.io/skip and warns about rule ids it does not know', () => {
    const job = hookJob({
      'helm.sh/hook': 'pre-upgrade',
      'hookguard.io/skip': 'hook-ttl, hook-deadline, hook-label, termination-message-policy, no-such-rule',
    });
    const decision = decide(request(job), 'mutate', enforce);
    expect(decision.patch).toEqual([]);
    expect(decision.findings).toEqual([
      { rule: 'skip', action: 'warn', message: 'hookguard.io/skip names unknown rules: no-such-rule' },
    ]);
    expect(decision.warnings).toEqual(['hookguard [skip]: hookguard.io/skip names unknown rules: no-such-rule']);
    // Once per object: the validating webhook does not repeat it.
    expect(decide(request(job), 'validate', enforce).warnings).toEqual([]);
  });

  it('denies a racing CREATE at /validate in enforce mode, and only warns in audit mode', () => {
    const job = hookJob({ 'helm.sh/hook': 'pre-upgrade', 'hookguard.io/skip': 'min-runtime' });
    const argo = { userInfo: { username: ARGOCD_CONTROLLER } };
    const denied = decide(request(job, argo), 'validate', decisionContext(loadConfig(), '3.1.0'));
    expect(denied.allowed).toBe(false);
    expect(denied.denial).toMatch(
      /^hookguard denied: Job apps\/migrate races with Argo CD 3\.1\.0 \(argocd-fast-hook-finalizer-race/,
    );
    const audited = decide(
      request(job, argo),
      'validate',
      decisionContext(loadConfig({ overrides: { mode: 'audit' } }), '3.1.0'),
    );
    expect(audited).toMatchObject({ allowed: true, reason: 'would deny (audit)' });
    expect(audited.warnings[0]).toMatch(
      /^hookguard audit would deny \[version-race\]: Job apps\/migrate races with Argo CD 3\.1\.0/,
    );
    expect(audited.warnings[0]!.length).toBeLessThanOrEqual(120);
  });

  it('judges in audit mode what enforce mode would have stored, so mitigated hooks pass', () => {
    const argo = { userInfo: { username: ARGOCD_CONTROLLER } };
    const decision = decide(
      request(hookJob(), argo),
      'validate',
      decisionContext(loadConfig({ overrides: { mode: 'audit' } }), '3.1.0'),
    );
    expect(decision).toMatchObject({ allowed: true, findings: [], warnings: [] });
  });

  it('treats an unparseable Argo CD version as unknown: mutations only', () => {
    const argo = { userInfo: { username: ARGOCD_CONTROLLER } };
    const job = hookJob({ 'helm.sh/hook': 'pre-upgrade', 'hookguard.io/skip': 'min-runtime' });
    const context = decisionContext(loadConfig(), 'latest');
    expect(decide(request(job, argo), 'validate', context).allowed).toBe(true);
    expect(decide(request(hookJob(), argo), 'mutate', context).rules).toEqual([
      'hook-ttl',
      'idempotent-cleanup',
      'foreign-finalizer',
      'native-sidecar',
      'ttl-floor',
      'min-runtime',
      'hook-deadline',
      'mesh-sidecar',
      'hook-sync-options',
      'suspended-hook',
      'hook-managed-by',
      'hook-label',
      'termination-message-policy',
    ]);
  });

  it('denies a template-changing UPDATE at /mutate only', () => {
    const oldObject = hookJob();
    const object = structuredClone<KubeObject>(oldObject);
    (object.spec as { template: { spec: { containers: { image: string }[] } } }).template.spec.containers[0]!.image =
      'alpine:3.21';
    const update = request(object, { operation: 'UPDATE', oldObject });
    expect(decide(update, 'mutate', enforce)).toMatchObject({ allowed: false, patch: [], reason: 'denied' });
    expect(decide(update, 'validate', enforce)).toMatchObject({ allowed: true });
    expect(decide(update, 'mutate', audit)).toMatchObject({ allowed: true, reason: 'would deny (audit)' });
  });

  it('never patches an UPDATE', () => {
    const object = hookJob();
    expect(
      decide(request(object, { operation: 'UPDATE', oldObject: structuredClone(object) }), 'mutate', enforce),
    ).toMatchObject({
      allowed: true,
      patch: [],
      reason: 'compliant',
    });
  });
});

describe('the built-in advisories with the built-in rules', () => {
  const argo = { userInfo: { username: ARGOCD_CONTROLLER } };
  const FOREIGN =
    'hookguard [foreign-finalizer]: argo-cd#26180: the next sync fails while the deleted hook waits on example.com/cleanup';
  const SIDECAR =
    "hookguard [native-sidecar]: argo-cd#27407: Argo CD's finalizer removal fails here; hookguard sweep frees it";

  /** An Argo CD PreSync hook Job as Argo CD creates it on a version with the finalizer: a native sidecar, and a foreign finalizer. */
  function riskyHook(finalizers: string[]): KubeObject {
    const job = hookJob(
      { 'argocd.argoproj.io/hook': 'PreSync', 'argocd.argoproj.io/hook-delete-policy': 'BeforeHookCreation' },
      { ttlSecondsAfterFinished: 600, activeDeadlineSeconds: 600 },
    );
    job.metadata!.finalizers = finalizers;
    const podSpec = (job.spec as { template: { spec: { initContainers?: unknown[] } } }).template.spec;
    podSpec.initContainers = [{ name: 'proxy', image: 'envoy:1.31', restartPolicy: 'Always' }];
    return job;
  }

  it.each([
    // 3.1.0 adds the finalizer, removes it by Update and adds it again on the next sync: both warnings.
    ['3.1.0', [HOOK_FINALIZER, 'example.com/cleanup'], [FOREIGN, SIDECAR]],
    ['3.4.0', [HOOK_FINALIZER, 'example.com/cleanup'], [FOREIGN, SIDECAR]],
    // On 2.14.3 hookguard removes the finalizer at CREATE, so Argo CD never updates the Job to remove it; the next
    // sync still adds it to the Terminating Job.
    ['2.14.3', [HOOK_FINALIZER, 'example.com/cleanup'], [FOREIGN]],
    // 2.14.8 has no hook finalizer: neither failure exists.
    ['2.14.8', ['example.com/cleanup'], []],
    // Unknown version: the hook finalizer on the CREATE says this Argo CD has it.
    ['latest', [HOOK_FINALIZER, 'example.com/cleanup'], [FOREIGN, SIDECAR]],
    ['latest', ['example.com/cleanup'], []],
  ])('on %s with finalizers %j, warns %j, each at most 120 characters', (version, finalizers, warnings) => {
    const decision = decide(request(riskyHook(finalizers), argo), 'mutate', decisionContext(loadConfig(), version));
    expect(decision.allowed).toBe(true);
    expect(decision.warnings).toEqual(warnings);
    for (const warning of decision.warnings) expect(warning.length).toBeLessThanOrEqual(120);
    const warned = decision.findings.filter((finding) => finding.action === 'warn');
    expect(warned.map((finding) => finding.advisory)).toEqual(
      warnings.map((warning) =>
        warning === FOREIGN ? 'argocd-foreign-finalizer' : 'argocd-native-sidecar-finalizer-update',
      ),
    );
  });

  it('warns at render time (hookguard check) from the version alone: the manifest has no hook finalizer yet', () => {
    const render = decisionContext(loadConfig(), '3.1.0', 'render');
    const decision = decide(request(riskyHook(['example.com/cleanup']), argo), 'mutate', render);
    expect(decision.warnings).toEqual([FOREIGN, SIDECAR]);
  });

  it('never denies for an advisory only the sweep or a warning answers, even when every rule is skipped', () => {
    const job = riskyHook([HOOK_FINALIZER, 'example.com/cleanup']);
    job.metadata!.annotations!['hookguard.io/skip'] =
      'delete-policy,hook-ttl,idempotent-cleanup,foreign-finalizer,hook-finalizer,native-sidecar,ttl-floor,min-runtime,' +
      'lost-delete-hook,hook-deadline,hook-pod-restart-policy,mesh-sidecar,hook-sync-options,suspended-hook,hook-managed-by,' +
      'hook-label,termination-message-policy';
    // 3.4.0: the cache leak (sweep), the native sidecar (warning and sweep), the foreign finalizer (warning).
    const context = decisionContext(loadConfig(), '3.4.0');
    expect(decide(request(job, argo), 'validate', context)).toMatchObject({ allowed: true, findings: [] });
    expect(decide(request(job, argo), 'mutate', context)).toMatchObject({ patch: [], findings: [], rules: [] });
  });

  it.each([
    ['a hook with a fixed name', undefined, 'a finalizer this hook keeps is removed at the next sync'],
    ['a generateName hook', 'migrate-', 'only on hooks with a fixed name, not on this generateName hook'],
  ])(
    'notes gitops-engine#770 on the fast-race findings from 3.0.16, 3.1.4 and 3.2.0 on, for %s',
    (_name, generateName, text) => {
      const job = hookJob({ 'argocd.argoproj.io/hook': 'PreSync' });
      if (generateName) job.metadata!.generateName = generateName;
      for (const version of ['3.0.16', '3.1.4', '3.2.0', '3.3.14']) {
        const decision = decide(request(job, argo), 'mutate', decisionContext(loadConfig(), version));
        const guard = decision.findings.find((finding) => finding.rule === 'min-runtime');
        expect(guard, version).toMatchObject({
          advisory: 'argocd-fast-hook-finalizer-race',
          note: expect.stringContaining(text),
        });
      }
      for (const version of ['2.14.3', '3.0.15', '3.1.0', '3.1.3']) {
        const decision = decide(request(job, argo), 'mutate', decisionContext(loadConfig(), version));
        expect(
          decision.findings.find((finding) => finding.rule === 'min-runtime'),
          version,
        ).not.toHaveProperty('note');
      }
    },
  );
});
