// What the webhook would store for a hook, restricted to what `hookguard policies` covers: the reference both the
// differential test (test/unit/policies/) and the cluster test (test/cluster/policies.test.ts) hold the policies to.
import { decisionContext } from '../../src/config/decision-context.js';
import { loadConfig } from '../../src/config/load.js';
import type { DecisionContext } from '../../src/core/context.js';
import { decide } from '../../src/core/decide.js';
import { applyPatch } from '../../src/core/json-patch.js';
import { podSpecOf } from '../../src/core/objects.js';
import type { KubeObject } from '../../src/core/types.js';
import { ruleCoverage } from '../../src/policies/coverage.js';
import { withoutRules } from '../../src/rules/index.js';

/**
 * What the API server's defaulting puts in before any admission: the fields the covered rules read (kubernetes
 * pkg/apis/core/v1/defaults.go SetDefaults_PodSpec restartPolicy Always, SetDefaults_Container
 * terminationMessagePolicy File; pkg/apis/batch/v1/defaults.go SetDefaults_Job backoffLimit 6).
 */
export function defaulted(manifest: KubeObject): KubeObject {
  const object = structuredClone(manifest);
  const metadata = (object.metadata ??= {}) as Record<string, unknown>;
  metadata.namespace ??= 'apps';
  if (object.kind === 'Job') (object.spec as Record<string, unknown>).backoffLimit ??= 6;
  const podSpec = podSpecOf(object);
  if (podSpec) {
    podSpec.restartPolicy ??= 'Always';
    for (const list of [podSpec.initContainers, podSpec.containers])
      for (const container of Array.isArray(list) ? list : []) container.terminationMessagePolicy ??= 'File';
  }
  return object;
}

/** The rules the policies carry, in whole or in part: decide() is run with these only. */
const COVERED = new Set(
  ruleCoverage()
    .filter((rule) => rule.coverage === 'policy' || rule.coverage === 'partial')
    .map((rule) => rule.id),
);

export function contextOf(config: Record<string, string>, argocdVersion?: string): DecisionContext {
  const context = decisionContext(loadConfig({ overrides: config }), argocdVersion);
  const off = new Set([...context.ruleSet.mutations, ...context.ruleSet.createValidators].map((rule) => rule.id));
  for (const id of COVERED) off.delete(id);
  return { ...context, ruleSet: withoutRules(context.ruleSet, off) };
}

/**
 * decide()'s stored object (the patch it sends: none in audit mode) and warnings, with what --explain says the
 * policies leave out put back as sent: containers' commands and args (idempotent-cleanup's rewrites) and
 * spec.activeDeadlineSeconds (hook-deadline's configured deadline).
 */
export function byWebhook(context: DecisionContext, object: KubeObject, username: string) {
  const request = {
    uid: 'u',
    operation: 'CREATE',
    namespace: String((object.metadata as Record<string, unknown>).namespace),
    userInfo: { username },
    object,
  };
  const decision = decide(request, 'mutate', context);
  const stored = applyPatch(structuredClone(object), decision.patch, true, false).newDocument;
  const sent = podSpecOf(object);
  const after = podSpecOf(stored);
  if (sent && after)
    for (const list of ['initContainers', 'containers'] as const)
      after[list]?.forEach((container, index) => {
        const original = (sent[list] as Record<string, unknown>[])[index];
        for (const field of ['command', 'args'])
          if (original?.[field] === undefined) delete container[field];
          else container[field] = original[field];
      });
  const deadline = object.spec as Record<string, unknown>;
  const storedSpec = stored.spec as Record<string, unknown>;
  if (deadline.activeDeadlineSeconds === undefined) delete storedSpec.activeDeadlineSeconds;
  const warnings = decision.findings
    .filter((finding) => finding.rule === 'hook-deadline' && finding.action === 'warn')
    .map((finding) => `hookguard [hook-deadline]: ${finding.message}`);
  return { stored, warnings };
}
