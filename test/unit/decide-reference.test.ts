// decide()'s shortcuts against a straightforward decide() on every fixture. The shortcuts: the rules edit a copy
// that shares all but what they may write with the request (cloneForRules), so the diff and version-race's
// comparison skip the shared parts; and a cleanup script's rewrite is remembered by its text. The reference hands
// each rule a private deep copy of everything (so the diff and the comparison walk the whole object, as a clone of
// the whole object made them do) and sees every script scanned afresh. The answers must be the same to the byte:
// patch, warnings, allowed, messages, findings, reason, rules.
import { isDeepStrictEqual } from 'node:util';
import { describe, expect, it } from 'vitest';
import { decisionContext } from '../../src/config/decision-context.js';
import { loadConfig } from '../../src/config/load.js';
import type { DecisionContext } from '../../src/core/context.js';
import { decide, type Decision } from '../../src/core/decide.js';
import { applyPatch } from '../../src/core/json-patch.js';
import { makeKubectlDeletesIdempotent } from '../../src/core/kubectl-delete.js';
import { objectLabel } from '../../src/core/objects.js';
import type { Stage } from '../../src/core/rule.js';
import type { AdmissionRequest, Endpoint, KubeObject } from '../../src/core/types.js';
import { loadFixtures } from '../support/fixtures.js';
import { ARGOCD_CONTROLLER } from '../support/objects.js';
import { admissionReview } from '../support/reviews.js';

const REQUESTERS = { helm: 'kubernetes-admin', argocd: ARGOCD_CONTROLLER } as const;

/**
 * Every rule runs on a deep copy of its own: nothing of the object it edits is shared with the request. And each is
 * held to what decide() and version-race take on trust: a rule that changes the object reports the change.
 */
function straightforward(context: DecisionContext): DecisionContext {
  return {
    ...context,
    ruleSet: {
      ...context.ruleSet,
      mutations: context.ruleSet.mutations.map((rule) => ({
        ...rule,
        mutate(object: KubeObject, ruleContext: Parameters<typeof rule.mutate>[1]) {
          for (const key of Object.keys(object)) object[key] = structuredClone(object[key]);
          const before = structuredClone(object);
          const outcome = rule.mutate(object, ruleContext);
          if (outcome.mutations.length === 0 && !isDeepStrictEqual(before, object))
            throw new Error(`${rule.id} changed ${objectLabel(object)} and reported no change`);
          return outcome;
        },
      })),
    },
  };
}

/** Pushes every remembered script rewrite out of its bounded cache, so the next decision scans each script afresh. */
function forgetScriptRewrites(): void {
  for (let index = 0; index < 600; index++)
    makeKubectlDeletesIdempotent({ command: ['sh', '-c', `kubectl delete job stale-${index}`] }, []);
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null) {
    for (const item of Object.values(value)) deepFreeze(item);
    Object.freeze(value);
  }
  return value;
}

function request(object: KubeObject, username: string): AdmissionRequest {
  return (admissionReview({ uid: 'reference', operation: 'CREATE', object, username }) as { request: AdmissionRequest })
    .request;
}

/** The decision as the HTTP layer and the audit line use it, every key in its order. */
const answer = (decision: Decision) => JSON.stringify(decision);

const fixtures = loadFixtures();
const cases = (['enforce', 'audit'] as const).flatMap((mode) =>
  (['admission', 'render'] as const satisfies readonly Stage[]).flatMap((stage) =>
    (Object.keys(REQUESTERS) as (keyof typeof REQUESTERS)[]).map((requester) => ({ mode, stage, requester })),
  ),
);

describe('decide() and a straightforward decide() give the same answers on every fixture', () => {
  it.each(cases)('$mode mode, $stage, as the $requester requester', ({ mode, stage, requester }) => {
    const context = decisionContext(loadConfig({ overrides: { mode } }), '2.14.3', stage);
    const reference = straightforward(context);
    let patched = 0;
    for (const { file, object } of fixtures) {
      const created = request(object, REQUESTERS[requester]);
      const expected = (endpoint: Endpoint, review: AdmissionRequest) => {
        forgetScriptRewrites();
        return answer(decide(structuredClone(review), endpoint, reference));
      };
      // The request frozen: a rule that wrote into what the copy shares with it would throw here.
      const actual = (endpoint: Endpoint, review: AdmissionRequest) =>
        answer(decide(deepFreeze(structuredClone(review)), endpoint, context));
      const mutation = expected('mutate', created);
      // Twice: the first scans each script (and remembers its rewrite), the second reads it back.
      expect(actual('mutate', created), file).toBe(mutation);
      expect(actual('mutate', created), file).toBe(mutation);
      const patch = (JSON.parse(mutation) as Decision).patch;
      if (patch.length > 0) patched++;
      const stored = { ...created, object: applyPatch(structuredClone(object), patch).newDocument };
      const validation = expected('validate', stored);
      expect(actual('validate', stored), file).toBe(validation);
      // The object as written, as the validating webhook sees it when the mutating one was bypassed.
      expect(actual('validate', created), file).toBe(expected('validate', created));
    }
    // The fixtures do exercise the patch (enforce mode sends it; audit mode withholds it).
    if (mode === 'enforce') expect(patched).toBeGreaterThan(fixtures.length / 2);
  });
});
