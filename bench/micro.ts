// In-process cost of the core decision for each request of the mix, against the JSON work every webhook does
// anyway: parsing the review and serialising a value of the same size.
import { performance } from 'node:perf_hooks';
import type { DecisionContext } from '../src/core/decide.js';
import type { AdmissionRequest } from '../src/core/types.js';
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

export function runMicro(requests: readonly BenchRequest[], decide: Decide, context: DecisionContext, budgetMs: number): MicroResult[] {
  return requests.map((entry) => {
    const request = (JSON.parse(entry.body) as { request: AdmissionRequest }).request;
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

export function round(value: number, digits: number): number {
  const scale = 10 ** digits;
  return Math.round(value * scale) / scale;
}
