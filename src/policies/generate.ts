// `hookguard policies`: the rules an admission policy can carry exactly, as MutatingAdmissionPolicies and
// ValidatingAdmissionPolicies (admissionregistration.k8s.io/v1, Kubernetes 1.36+), with their bindings, from the same
// DecisionContext the webhook decides with. Which rules, and why not the others: ./coverage.ts.
//
// One policy and one binding per rule, named hookguard-<rule id>: each turned off by deleting its binding. Their
// order does not matter (the API server gives none between policies): no generated mutation reads a field another
// one writes. Each mutation's condition is in the policy's matchConditions, so a policy that does not apply costs
// no patch at all (no patch when nothing changes, as the webhook). failurePolicy Ignore, as the webhook's: a policy
// that fails (a parameter unreadable, an expression over budget) lets the hook through unchanged.
import { GUARD_CONTAINER_NAME, HOOKGUARD_HOOK_LABEL, HOOKGUARD_HOOK_LABEL_VALUE } from '../core/annotations.js';
import { normalizeArgoVersion } from '../core/argocd-version.js';
import { ruleContextFor, type DecisionContext } from '../core/context.js';
import type { HookInfo } from '../core/hook.js';
import { gateOpen } from '../core/rule.js';
import type { KubeObject } from '../core/types.js';
import { MISSING_DEADLINE_WARNING } from '../rules/hook-deadline.js';
import { argoSyncPhase, AUDIT_ONLY, CLEANUP, deletesOnSuccess, IS_HOOK, skips, TEST_ONLY } from './cel.js';

export const ADMISSION_API = 'admissionregistration.k8s.io/v1';
export const PARAMS_NAME = 'hookguard-policy-params';
/** Every object `hookguard policies` prints carries it: `kubectl delete … -l hookguard.io/policies` removes them all. */
export const POLICIES_LABEL = 'hookguard.io/policies';

/**
 * The config settings the policies below are written from, beside `mode`, `excludedNamespaces`, the rule switches
 * and the Argo CD version: the chart renders the policies for their defaults only (./chart.ts), since changing one
 * means generating again. The parameters ConfigMap is not among them: serve writes it (config policyParams).
 */
export const POLICY_SETTINGS = [
  'rules.hookTtl.ttlSecondsAfterFinished',
  'rules.ttlFloor.minTtlSecondsAfterFinished',
  'rules.idempotentCleanup.minBackoffLimit',
  'rules.hookDeadline.activeDeadlineSeconds',
  'rules.hookDeadline.parallelJobs',
  'rules.hookDeadline.warn',
  'argocd.controllerUsernames',
  'argocd.trackingLabel',
] as const;

export interface PolicyOptions {
  /** Where the parameters ConfigMap lives (the namespace hookguard is installed in). */
  namespace: string;
}

type Kind = 'Job' | 'Pod';

interface MatchCondition {
  name: string;
  expression: string;
}

const RESOURCES: Readonly<Record<Kind, { apiGroups: string[]; apiVersions: string[]; resources: string[] }>> = {
  Job: { apiGroups: ['batch'], apiVersions: ['v1'], resources: ['jobs'] },
  Pod: { apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] },
};

function labels(): Record<string, string> {
  return { 'app.kubernetes.io/name': 'hookguard', [POLICIES_LABEL]: 'generated' };
}

function matchConstraints(context: DecisionContext, kinds: readonly Kind[]): Record<string, unknown> {
  const excluded = context.config.excludedNamespaces;
  return {
    ...(excluded.length > 0
      ? {
          namespaceSelector: {
            matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'NotIn', values: [...excluded] }],
          },
        }
      : {}),
    resourceRules: kinds.map((kind) => ({ ...RESOURCES[kind], operations: ['CREATE'] })),
  };
}

/** What every mutation of a rule asks first: a hook, in enforce mode for this object, not opting out of the rule. */
function mutationConditions(ruleId: string, own: readonly MatchCondition[]): MatchCondition[] {
  return [
    { name: 'is-hook', expression: IS_HOOK },
    { name: 'not-audit-mode', expression: `!${AUDIT_ONLY}` },
    { name: 'not-skipped', expression: `!${skips(ruleId)}` },
    ...own,
  ];
}

type Mutation =
  | { patchType: 'JSONPatch'; jsonPatch: { expression: string } }
  | { patchType: 'ApplyConfiguration'; applyConfiguration: { expression: string } };

interface MutatingRule {
  id: string;
  kinds: readonly Kind[];
  conditions: MatchCondition[];
  mutations: Mutation[];
  /** Reads the parameters ConfigMap. */
  params?: boolean;
}

function mutatingPolicy(context: DecisionContext, rule: MutatingRule, options: PolicyOptions): KubeObject[] {
  const name = `hookguard-${rule.id}`;
  return [
    {
      apiVersion: ADMISSION_API,
      kind: 'MutatingAdmissionPolicy',
      metadata: { name, labels: labels() },
      spec: {
        ...(rule.params ? { paramKind: { apiVersion: 'v1', kind: 'ConfigMap' } } : {}),
        matchConstraints: matchConstraints(context, rule.kinds),
        matchConditions: mutationConditions(rule.id, rule.conditions),
        failurePolicy: 'Ignore',
        reinvocationPolicy: 'Never',
        mutations: rule.mutations,
      },
    },
    {
      apiVersion: ADMISSION_API,
      kind: 'MutatingAdmissionPolicyBinding',
      metadata: { name, labels: labels() },
      spec: {
        policyName: name,
        ...(rule.params
          ? { paramRef: { name: PARAMS_NAME, namespace: options.namespace, parameterNotFoundAction: 'Allow' } }
          : {}),
      },
    },
  ];
}

const jsonPatch = (expression: string): Mutation => ({ patchType: 'JSONPatch', jsonPatch: { expression } });
const applyConfiguration = (expression: string): Mutation => ({
  patchType: 'ApplyConfiguration',
  applyConfiguration: { expression },
});

/** hook-ttl: a TTL for a hook Job nothing deletes once it succeeds (src/rules/hook-ttl.ts). */
function hookTtl(context: DecisionContext): MutatingRule {
  const { hookTtl: ttl, ttlFloor } = context.config.rules;
  const seconds = Math.max(ttl.ttlSecondsAfterFinished, ttlFloor.minTtlSecondsAfterFinished);
  const detection = context.config.hookDetection;
  return {
    id: 'hook-ttl',
    kinds: ['Job'],
    conditions: [
      { name: 'no-ttl', expression: '!has(object.spec.ttlSecondsAfterFinished)' },
      { name: 'not-a-test-hook', expression: `!${TEST_ONLY}` },
      { name: 'not-deleted-on-success', expression: `!${deletesOnSuccess(detection)}` },
    ],
    mutations: [jsonPatch(`[JSONPatch{op: "add", path: "/spec/ttlSecondsAfterFinished", value: ${seconds}}]`)],
  };
}

/** The parameter that says whether ttl-floor runs on Argo CD's sync hooks. */
export const TTL_FLOOR_ON_SYNC_HOOKS = 'ttlFloorOnArgoSyncHooks';

/** ttl-floor: a hook Job's TTL raised to the floor (src/rules/ttl-floor.ts); Argo CD sync hooks as the parameter says. */
function ttlFloor(context: DecisionContext): MutatingRule {
  const floor = context.config.rules.ttlFloor.minTtlSecondsAfterFinished;
  const param = `(params != null && has(params.data) && '${TTL_FLOOR_ON_SYNC_HOOKS}' in params.data && params.data['${TTL_FLOOR_ON_SYNC_HOOKS}'] == 'true')`;
  return {
    id: 'ttl-floor',
    kinds: ['Job'],
    params: true,
    conditions: [
      {
        name: 'below-the-floor',
        expression: `has(object.spec.ttlSecondsAfterFinished) && object.spec.ttlSecondsAfterFinished < ${floor}`,
      },
      { name: 'gate', expression: `!${argoSyncPhase(context.config.hookDetection)} || ${param}` },
    ],
    mutations: [jsonPatch(`[JSONPatch{op: "replace", path: "/spec/ttlSecondsAfterFinished", value: ${floor}}]`)],
  };
}

/** idempotent-cleanup, its retries part: cleanup hook Jobs get backoffLimit ≥ the minimum (the API default is 6). */
function cleanupRetries(context: DecisionContext): MutatingRule {
  const minimum = context.config.rules.idempotentCleanup.minBackoffLimit;
  return {
    id: 'idempotent-cleanup',
    kinds: ['Job'],
    conditions: [
      { name: 'cleanup-hook', expression: CLEANUP },
      {
        name: 'too-few-retries',
        expression: `(has(object.spec.backoffLimit) ? object.spec.backoffLimit : 6) < ${minimum}`,
      },
    ],
    mutations: [jsonPatch(`[JSONPatch{op: "add", path: "/spec/backoffLimit", value: ${minimum}}]`)],
  };
}

/** hook-label: hookguard.io/hook: admitted, unless the object has the label (src/rules/hook-label.ts). */
function hookLabel(): MutatingRule {
  const key = JSON.stringify(HOOKGUARD_HOOK_LABEL);
  return {
    id: 'hook-label',
    kinds: ['Job', 'Pod'],
    conditions: [
      { name: 'unlabelled', expression: `!(has(object.metadata.labels) && ${key} in object.metadata.labels)` },
    ],
    mutations: [
      applyConfiguration(
        `Object{metadata: Object.metadata{labels: {${key}: ${JSON.stringify(HOOKGUARD_HOOK_LABEL_VALUE)}}}}`,
      ),
    ],
  };
}

/** The containers of one list of the pod spec that are left at File: CEL over `spec` (the pod spec's path). */
function atFile(podSpec: string, list: 'containers' | 'initContainers'): string {
  return `(has(${podSpec}.${list}) ? ${podSpec}.${list} : []).filter(c, c.name != ${JSON.stringify(GUARD_CONTAINER_NAME)} && (!has(c.terminationMessagePolicy) || c.terminationMessagePolicy == 'File'))`;
}

/**
 * termination-message-policy: FallbackToLogsOnError on each container left at File (src/rules/
 * termination-message-policy.ts). An ApplyConfiguration merges containers and initContainers by name (both are map
 * lists keyed by name, `+listType=map +listMapKey=name` in k8s.io/api core/v1 types.go), so naming a container
 * changes that one field of that container only. One mutation per list and kind; an empty Object{} changes nothing.
 */
function terminationMessagePolicy(): MutatingRule {
  const mutation = (list: 'containers' | 'initContainers') => {
    const job = 'object.spec.template.spec';
    const pod = 'object.spec';
    const entries = (podSpec: string, type: string) =>
      `${atFile(podSpec, list)}.map(c, ${type}.${list}{name: c.name, terminationMessagePolicy: "FallbackToLogsOnError"})`;
    const forJob = `Object{spec: Object.spec{template: Object.spec.template{spec: Object.spec.template.spec{${list}: ${entries(job, 'Object.spec.template.spec')}}}}}`;
    const forPod = `Object{spec: Object.spec{${list}: ${entries(pod, 'Object.spec')}}}`;
    return applyConfiguration(
      `object.kind == 'Job' ? (${atFile(job, list)}.size() > 0 ? ${forJob} : Object{}) : (${atFile(pod, list)}.size() > 0 ? ${forPod} : Object{})`,
    );
  };
  return {
    id: 'termination-message-policy',
    kinds: ['Job', 'Pod'],
    conditions: [],
    mutations: [mutation('initContainers'), mutation('containers')],
  };
}

/** hook-pod-restart-policy at admission: Always (the API default) becomes Never on a bare hook Pod. */
function hookPodRestartPolicy(): MutatingRule {
  return {
    id: 'hook-pod-restart-policy',
    kinds: ['Pod'],
    conditions: [{ name: 'restarts-always', expression: "object.spec.restartPolicy == 'Always'" }],
    mutations: [jsonPatch('[JSONPatch{op: "replace", path: "/spec/restartPolicy", value: "Never"}]')],
  };
}

/**
 * hook-deadline's warning (src/rules/hook-deadline.ts): a ValidatingAdmissionPolicy bound with [Warn] ([Audit, Warn]
 * in audit mode) whose
 * validation fails where the webhook names the missing deadline. Undefined where the rule never warns.
 */
function hookDeadlineWarning(context: DecisionContext): KubeObject[] {
  const { activeDeadlineSeconds, parallelJobs, warn } = context.config.rules.hookDeadline;
  if (!warn || (activeDeadlineSeconds > 0 && parallelJobs)) return [];
  const several =
    "object.kind == 'Job' && ((has(object.spec.completions) && object.spec.completions > 1) || (has(object.spec.parallelism) && object.spec.parallelism > 1))";
  // With a deadline configured, the webhook sets one (webhook only) and warns only about the Jobs it leaves out.
  const expression =
    activeDeadlineSeconds === 0
      ? 'has(object.spec.activeDeadlineSeconds)'
      : `has(object.spec.activeDeadlineSeconds) || !(${several})`;
  const name = 'hookguard-hook-deadline';
  return [
    {
      apiVersion: ADMISSION_API,
      kind: 'ValidatingAdmissionPolicy',
      metadata: { name, labels: labels() },
      spec: {
        matchConstraints: matchConstraints(context, ['Job', 'Pod']),
        matchConditions: [
          { name: 'is-hook', expression: IS_HOOK },
          { name: 'not-skipped', expression: `!${skips('hook-deadline')}` },
        ],
        failurePolicy: 'Ignore',
        validations: [{ expression, message: `hookguard [hook-deadline]: ${MISSING_DEADLINE_WARNING}` }],
      },
    },
    {
      apiVersion: ADMISSION_API,
      kind: 'ValidatingAdmissionPolicyBinding',
      metadata: { name, labels: labels() },
      // Audit mode writes every decision down (the webhook's audit log line): here the API server's audit log gets the
      // failure as the annotation validation.policy.admission.k8s.io/validation_failure (kubernetes/apiserver
      // v0.37.2 pkg/admission/plugin/policy/validating/dispatcher.go). Never Deny: the webhook only warns.
      spec: { policyName: name, validationActions: context.config.mode === 'audit' ? ['Audit', 'Warn'] : ['Warn'] },
    },
  ];
}

/** An Argo CD sync hook, as readHook() would read one: what the parameters are judged for. */
const ARGOCD_SYNC_HOOK: HookInfo = {
  kind: 'Job',
  system: 'argocd',
  phases: ['PreSync'],
  cleanup: false,
  testOnly: false,
  appliedByArgo: true,
  argoNeverApplies: false,
  argoSyncPhase: true,
  skip: new Set(),
  auditOnly: false,
};

/**
 * The parameters ConfigMap: what the version-dependent policies read, judged by the core's own gate for each Argo CD
 * version that may apply hooks here (by default the context's pinned one, or an unknown one). Of several, the
 * floor applies to sync hooks when any of them needs it: a policy cannot tell which Argo CD applied a hook. An Argo
 * CD upgrade changes this object only.
 */
export function policyParams(
  context: DecisionContext,
  options: PolicyOptions,
  versions: ReadonlyArray<string | undefined> = [normalizeArgoVersion(context.pinnedArgocdVersion)],
): KubeObject {
  const floor = context.ruleSet.mutations.find((rule) => rule.id === 'ttl-floor');
  const judged = versions.length > 0 ? versions : [undefined];
  const floorOnSyncHooks = judged.some(
    (version) => floor !== undefined && gateOpen(floor, ruleContextFor(ARGOCD_SYNC_HOOK, context, version, undefined)),
  );
  const known = [...new Set(judged.map((version) => version ?? 'unknown'))].sort();
  return {
    apiVersion: 'v1',
    kind: 'ConfigMap',
    metadata: { name: PARAMS_NAME, namespace: options.namespace, labels: labels() },
    data: {
      // Only read by people: which versions the parameters were judged for ('' when no version was known at all).
      argocdVersion: known.join(',') === 'unknown' ? '' : known.join(','),
      [TTL_FLOOR_ON_SYNC_HOOKS]: String(floorOnSyncHooks),
    },
  };
}

/**
 * Every policy and binding for the rules the context has on, and the parameters. In audit mode no mutation is
 * generated (a mutating policy cannot withhold its patch and say what it would have done); the warnings stay.
 */
export function admissionPolicies(context: DecisionContext, options: PolicyOptions): KubeObject[] {
  const on = (id: string) => context.ruleSet.mutations.some((rule) => rule.id === id);
  const rules = context.config.rules;
  const mutating: MutatingRule[] = [];
  if (context.config.mode === 'enforce') {
    if (on('hook-ttl')) mutating.push(hookTtl(context));
    if (on('ttl-floor') && rules.ttlFloor.minTtlSecondsAfterFinished > 0) mutating.push(ttlFloor(context));
    if (on('idempotent-cleanup')) mutating.push(cleanupRetries(context));
    if (on('hook-label')) mutating.push(hookLabel());
    if (on('termination-message-policy')) mutating.push(terminationMessagePolicy());
    if (on('hook-pod-restart-policy')) mutating.push(hookPodRestartPolicy());
  }
  const objects = mutating.flatMap((rule) => mutatingPolicy(context, rule, options));
  if (on('hook-deadline')) objects.push(...hookDeadlineWarning(context));
  if (mutating.some((rule) => rule.params)) objects.push(policyParams(context, options));
  return objects;
}
