// In-process cost of the core decision for each request of the mix, against the JSON work every webhook does
// anyway: parsing the review and serialising a value of the same size.
import { performance } from 'node:perf_hooks';
import type { DecisionContext } from '../src/core/context.js';
import type { Decision } from '../src/core/decide.js';
import type { MutationRule, RuleContext } from '../src/core/rule.js';
import type { AdmissionRequest, Endpoint, KubeObject } from '../src/core/types.js';
import type { AdmissionReviewResponse } from '../src/http/responses.js';
import type { BenchRequest } from './workload.js';

type Decide = typeof import('../src/core/decide.js').decide;

export interface MicroResult {
  source: string;
  endpoint: string;
  requester: string;
  decideMicros: number;
  jsonMicros: number;
  /** decide / (JSON.parse + JSON.stringify) */
  ratio: number;
}

/** The AdmissionRequest a review of the mix carries, parsed from its body. */
export function requestOf(entry: BenchRequest): AdmissionRequest {
  return (JSON.parse(entry.body) as { request: AdmissionRequest }).request;
}

/** Mean µs per call of `fn` over the calls that fit in `budgetMs`, after a warm-up of a quarter of it for the JIT. */
function microsPerCall(fn: () => unknown, budgetMs: number): number {
  callsFor(fn, budgetMs / 4);
  const { calls, elapsedMs } = callsFor(fn, budgetMs);
  return (elapsedMs * 1000) / calls;
}

function callsFor(fn: () => unknown, budgetMs: number): { calls: number; elapsedMs: number } {
  const started = performance.now();
  let calls = 0;
  let elapsedMs = 0;
  while (elapsedMs < budgetMs) {
    for (let i = 0; i < 50; i++) fn();
    calls += 50;
    elapsedMs = performance.now() - started;
  }
  return { calls, elapsedMs };
}

/**
 * Each review's decide() time, after the whole list has been decided in turn for twice the budget: a server sees every
 * kind of object, and its compiled decide() is the one all of them shaped. Timed one review at a time without that
 * warm-up, the first reviews measured the compiler at work instead (they took up to twice as long as the same reviews
 * timed later in the same run).
 */
export function runMicro(
  requests: readonly BenchRequest[],
  decide: Decide,
  context: DecisionContext,
  budgetMs: number,
): MicroResult[] {
  const reviews = requests.map((entry) => ({
    entry,
    request: requestOf(entry),
  }));
  callsFor(() => {
    for (const { entry, request } of reviews) decide(request, entry.endpoint, context);
  }, budgetMs * 2);
  return reviews.map(({ entry, request }) => {
    const decideMicros = microsPerCall(() => decide(request, entry.endpoint, context), budgetMs);
    const jsonMicros = microsPerCall(() => JSON.stringify(JSON.parse(entry.body)), budgetMs);
    return {
      source: entry.source,
      endpoint: entry.endpoint,
      requester: entry.requester,
      decideMicros: round(decideMicros, 2),
      jsonMicros: round(jsonMicros, 2),
      ratio: round(decideMicros / jsonMicros, 2),
    };
  });
}

/** What hookguard adds to each request, in process, as the mean over the whole mix in turn (the server's order). */
export interface AddedWork {
  /** JSON.parse of the review: work the baseline does too, for scale. */
  parseMicros: number;
  decideMicros: number;
  /** The audit record built and serialised, as pino does for its line. */
  auditLineMicros: number;
  /** The AdmissionReview answer built (the patch as base64 JSON) and serialised, as fastify does. */
  answerMicros: number;
  /** Counting the request, its latency and its findings. */
  metricsMicros: number;
}

export interface AddedWorkParts {
  decide: (request: AdmissionRequest, endpoint: Endpoint) => Decision;
  auditLine: (request: AdmissionRequest, endpoint: Endpoint, decision: Decision) => string;
  answer: (uid: string, decision: Decision) => AdmissionReviewResponse;
  count: (endpoint: Endpoint, decision: Decision, answer: AdmissionReviewResponse) => void;
}

export function measureAddedWork(
  requests: readonly BenchRequest[],
  parts: AddedWorkParts,
  budgetMs: number,
): AddedWork {
  const reviews = requests.map((entry) => ({
    entry,
    request: requestOf(entry),
  }));
  const decided = reviews.map((review) => {
    const decision = parts.decide(review.request, review.entry.endpoint);
    return { ...review, decision, answer: parts.answer(review.request.uid, decision) };
  });
  // One call of the measured function per review of the mix, in turn; microsPerCall's count is of whole passes.
  const perReview = (pass: () => void) => microsPerCall(pass, budgetMs) / requests.length;
  return {
    parseMicros: round(
      perReview(() => reviews.forEach(({ entry }) => void JSON.parse(entry.body))),
      2,
    ),
    decideMicros: round(
      perReview(() => reviews.forEach(({ entry, request }) => parts.decide(request, entry.endpoint))),
      2,
    ),
    auditLineMicros: round(
      perReview(() =>
        decided.forEach(({ entry, request, decision }) => parts.auditLine(request, entry.endpoint, decision)),
      ),
      2,
    ),
    answerMicros: round(
      perReview(() => decided.forEach(({ request, decision }) => JSON.stringify(parts.answer(request.uid, decision)))),
      2,
    ),
    metricsMicros: round(
      perReview(() => decided.forEach(({ entry, decision, answer }) => parts.count(entry.endpoint, decision, answer))),
      2,
    ),
  };
}

/**
 * Each mutation rule's time on the objects of `/mutate` reviews it runs on (in scope, gate open) and does not apply to:
 * it changes nothing and reports nothing. The rules are caught at work inside decide() (the object and the context it
 * hands them), then timed alone on those.
 */
export function rulesNotApplicable(
  requests: readonly BenchRequest[],
  context: DecisionContext,
  decide: Decide,
  jsonEqual: (a: unknown, b: unknown) => boolean,
  budgetMs: number,
): { rule: string; objects: number; maxMicros: number; medianMicros: number }[] {
  const calls: { rule: MutationRule; object: KubeObject; context: RuleContext }[] = [];
  const watching: DecisionContext = {
    ...context,
    ruleSet: {
      ...context.ruleSet,
      mutations: context.ruleSet.mutations.map((rule) => ({
        ...rule,
        mutate(object: KubeObject, ruleContext: RuleContext) {
          calls.push({ rule, object: structuredClone(object), context: ruleContext });
          return rule.mutate(object, ruleContext);
        },
      })),
    },
  };
  for (const entry of requests) {
    if (entry.endpoint !== 'mutate') continue;
    decide(requestOf(entry), 'mutate', watching);
  }
  const byRule = new Map<string, number[]>();
  for (const call of calls) {
    const probe = structuredClone(call.object);
    const outcome = call.rule.mutate(probe, call.context);
    const applies =
      outcome.mutations.length > 0 ||
      outcome.warnings.length > 0 ||
      outcome.unmet !== undefined ||
      !jsonEqual(probe, call.object);
    if (applies) continue;
    // The object stays as it was, so every call sees the same input. The least of five short runs: a run the machine
    // interrupted says nothing of the rule.
    const runs = Array.from({ length: 5 }, () =>
      microsPerCall(() => call.rule.mutate(probe, call.context), budgetMs / 10),
    );
    const micros = Math.min(...runs);
    byRule.set(call.rule.id, [...(byRule.get(call.rule.id) ?? []), micros]);
  }
  return context.ruleSet.mutations.map((rule) => {
    const times = byRule.get(rule.id) ?? [];
    return {
      rule: rule.id,
      objects: times.length,
      maxMicros: times.length === 0 ? 0 : round(Math.max(...times), 3),
      medianMicros: times.length === 0 ? 0 : median(times),
    };
  });
}

export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const middle = sorted.length >> 1;
  return round(sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2, 3);
}

export function round(value: number, digits: number): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}
