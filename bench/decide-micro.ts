// `npm run bench:micro`: decide() alone, in process, without the servers of `npm run bench`. Prints the all-hooks
// mix's median (every fixture as the Argo CD 2.14.3 controller, to /mutate and /validate) as µs and as a ratio to
// JSON.parse + JSON.stringify of the same reviews in the same run, and each mutation rule's time on the objects it
// does not apply to. `--calls N` instead runs N passes of decide() over one kind of review and times nothing: the
// workload for `valgrind --tool=callgrind`, whose instruction counts do not move with the machine's load.
import { parseArgs } from 'node:util';
import { fromDist } from './built.js';
import { median, requestOf, rulesNotApplicable, runMicro } from './micro.js';
import { buildWorkload, scenarioMixes, type BenchRequest } from './workload.js';

type ConfigKeysModule = typeof import('../src/config/keys.js');
type ConfigLoadModule = typeof import('../src/config/load.js');
type DecisionContextModule = typeof import('../src/config/decision-context.js');
type DecideModule = typeof import('../src/core/decide.js');
type ObjectsModule = typeof import('../src/core/objects.js');

const ARGOCD_VERSION = '2.14.3';
/** Issue 40's targets: the all-hooks mix's median, and each rule on an object it does not apply to. */
const TARGET_MEDIAN_MICROS = 4;
const TARGET_RULE_MICROS = 1;
/** The kinds of review `--calls` runs: one requester and endpoint over the fixtures, or the non-hook objects. */
const KINDS = ['argocd-mutate', 'argocd-validate', 'helm-mutate', 'helm-validate', 'non-hooks'] as const;

const { values: flags } = parseArgs({
  options: {
    'micro-ms': { type: 'string', default: '40' },
    calls: { type: 'string' },
    kind: { type: 'string', default: 'argocd-mutate' },
  },
});

const { DEFAULTS } = await fromDist<ConfigKeysModule>('config/keys.js');
const { loadConfig } = await fromDist<ConfigLoadModule>('config/load.js');
const { decisionContext } = await fromDist<DecisionContextModule>('config/decision-context.js');
const { decide } = await fromDist<DecideModule>('core/decide.js');
const { jsonEqual } = await fromDist<ObjectsModule>('core/objects.js');
const context = decisionContext(loadConfig(), ARGOCD_VERSION);
const argocdController = DEFAULTS.argocd.controllerUsernames[0] as string;
const workload = buildWorkload(argocdController, (request) => decide(request, 'mutate', context).patch);

function ofKind(kind: string): BenchRequest[] {
  if (kind === 'non-hooks') return workload.requests.filter((entry) => !entry.hook);
  const [requester, endpoint] = kind.split('-');
  return workload.requests.filter(
    (entry) => entry.hook && entry.requester === requester && entry.endpoint === endpoint,
  );
}

if (flags.calls !== undefined) {
  if (!(KINDS as readonly string[]).includes(flags.kind)) throw new Error(`--kind: one of ${KINDS.join(', ')}`);
  const reviews = ofKind(flags.kind).map((entry) => ({
    endpoint: entry.endpoint,
    request: requestOf(entry),
  }));
  const passes = Number(flags.calls);
  for (let pass = 0; pass < passes; pass++)
    for (const { request, endpoint } of reviews) decide(request, endpoint, context);
} else {
  const budgetMs = Number(flags['micro-ms']);
  const allHooks = scenarioMixes(workload.requests)['argocd-hooks'];
  const micro = runMicro(allHooks, decide, context, budgetMs);
  const decideMedian = median(micro.map((entry) => entry.decideMicros));
  const jsonMedian = median(micro.map((entry) => entry.jsonMicros));
  console.log(
    `all-hooks mix (${allHooks.length} reviews, Argo CD ${ARGOCD_VERSION}): decide() median ${decideMedian} µs, ` +
      `JSON.parse+stringify median ${jsonMedian} µs, median of per-review ratios ${median(micro.map((entry) => entry.ratio))}`,
  );
  for (const kind of KINDS) {
    const rows = runMicro(ofKind(kind), decide, context, budgetMs);
    console.log(
      `  ${kind.padEnd(16)} decide() median ${median(rows.map((entry) => entry.decideMicros))} µs, ratio ${median(rows.map((entry) => entry.ratio))}`,
    );
  }
  console.log('each mutation rule on the objects of the all-hooks mix it does not apply to (max, median µs):');
  const rules = rulesNotApplicable(allHooks, context, decide, jsonEqual, budgetMs);
  for (const line of rules)
    console.log(
      `  ${line.rule.padEnd(28)} ${String(line.maxMicros).padStart(6)} ${String(line.medianMicros).padStart(6)}  (${line.objects} objects)`,
    );
  const slowest = Math.max(...rules.map((line) => line.maxMicros));
  const verdict = (met: boolean) => (met ? 'met' : 'MISSED');
  console.log(
    `target: all-hooks median <= ${TARGET_MEDIAN_MICROS} µs: ${decideMedian} µs, ${verdict(decideMedian <= TARGET_MEDIAN_MICROS)}; ` +
      `every rule <= ${TARGET_RULE_MICROS} µs where it does not apply: at most ${slowest} µs, ${verdict(slowest <= TARGET_RULE_MICROS)}`,
  );
}
