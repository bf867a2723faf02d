// `npm run bench`: hookguard against a bare fastify HTTPS baseline, on this machine, in one run.
// Both run as child processes over real TLS; autocannon loads them with keep-alive and no pipelining,
// alternating A B A B at each connection count so drift hits both; then the core decision is timed in-process.
// With `--before DIR` (another checkout of hookguard, built), that build runs as a third server in the same
// alternation, so a change's cost is measured against the code before it in one run.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import autocannon, { type Result } from 'autocannon';
import { repoRoot } from '../test/support/k8s-tools.js';
import { requestOnce, type Reply } from '../test/support/request-once.js';
import { writeCertificate, type ServerProcess } from '../test/support/server-process.js';
import { builtCertificateGenerator, builtDecision, fromDist } from './built.js';
import { describeMachine, type Machine } from './machine.js';
import { measureAddedWork, round, runMicro, type AddedWork, type MicroResult } from './micro.js';
import { renderMarkdown } from './report.js';
import { ARGOCD_VERSION, builtCliIn, startBenchHookguard, startEcho } from './servers.js';
import { autocannonRequests, buildWorkload, scenarioMixes, type BenchRequest, type Scenario } from './workload.js';

type AuditModule = typeof import('../src/http/audit.js');
type ResponsesModule = typeof import('../src/http/responses.js');
type MetricsModule = typeof import('../src/http/metrics.js');
type AppModule = typeof import('../src/http/app.js');

/** `before`: the build given with --before, when there is one. */
export type ServerName = 'hookguard' | 'baseline' | 'before';

export interface LoadRun {
  scenario: Scenario;
  server: ServerName;
  connections: number;
  round: number;
  durationSeconds: number;
  requests: number;
  rps: number;
  latencyMs: { p50: number; p97_5: number; p99: number; max: number; mean: number };
  errors: number;
  timeouts: number;
  non2xx: number;
  /** Server CPU time (user + system) per request answered: less sensitive than req/s to other load on the machine. */
  cpuMicrosPerRequest: number;
  rssMiB: number;
}

export interface ServerSummary {
  rps: number;
  p50: number;
  p97_5: number;
  p99: number;
  errors: number;
  cpuMicrosPerRequest: number;
  rssMiB: number;
  peakRssMiB: number;
}

export interface LevelSummary {
  scenario: Scenario;
  connections: number;
  hookguard: ServerSummary;
  baseline: ServerSummary;
  /** hookguard / baseline */
  ratios: { rps: number; p50: number; p99: number; cpu: number; rss: number };
  meetsTargets: { throughput: boolean; p99: boolean };
  /** With --before: that build's figures, and hookguard / before. */
  before?: ServerSummary;
  vsBefore?: { rps: number; p99: number; cpu: number; withinCpuLimit: boolean };
}

export interface BenchResults {
  date: string;
  machine: Machine;
  settings: {
    durationSeconds: number;
    warmupSeconds: number;
    rounds: number;
    connections: number[];
    argocdHookConnections: number[];
    nonHookConnections: number[];
    argocdVersion: string;
    pipelining: 1;
    logSink: string;
    /** --batched-baseline: the baseline parsed and answered in batches per turn of the event loop. */
    baselineBatched: boolean;
    /** --workers: hookguard's processes (bench/workers.ts); 1 is hookguard as it ships. */
    hookguardWorkers: number;
    /** With --before: the other build's folder and commit. */
    before?: { dir: string; commit: string };
  };
  workload: {
    requests: number;
    fixtures: number;
    hookRequests: number;
    answers: Record<string, number>;
  };
  levels: LevelSummary[];
  runs: LoadRun[];
  micro: MicroResult[];
  addedWork: AddedWork;
  targets: Targets;
}

export interface Targets {
  throughputRatioMin: number;
  p99RatioMax: number;
  cpuVsBeforeMax: number;
  /** Where a scenario has targets of its own (the Argo CD hooks: every rule at work). */
  byScenario: Partial<Record<Scenario, { throughputRatioMin: number; p99RatioMax: number }>>;
}

// cpuVsBeforeMax: a new rule may not make the server's CPU per request on the mix grow by more than 10%. The Argo CD
// hooks, where every rule runs on every request, have targets of their own (issue 22; 0.55x on Node.js 24 since issue 25).
const TARGETS: Targets = {
  throughputRatioMin: 0.9,
  p99RatioMax: 1.25,
  cpuVsBeforeMax: 1.1,
  byScenario: { 'argocd-hooks': { throughputRatioMin: 0.55, p99RatioMax: 2 } },
};
const MiB = 1024 * 1024;

const { values: flags } = parseArgs({
  options: {
    duration: { type: 'string', default: '5' },
    warmup: { type: 'string', default: '3' },
    rounds: { type: 'string', default: '4' },
    connections: { type: 'string', default: '32,128' },
    'argocd-hook-connections': { type: 'string', default: '32' },
    'non-hook-connections': { type: 'string', default: '32' },
    'micro-ms': { type: 'string', default: '40' },
    'no-write': { type: 'boolean', default: false },
    before: { type: 'string' },
    // The baseline parses and answers in batches per turn of the event loop, as hookguard does.
    'batched-baseline': { type: 'boolean', default: false },
    // hookguard as this many processes sharing its ports (bench/workers.ts): what a worker per core would give.
    workers: { type: 'string', default: '1' },
  },
});
const beforeDir = flags.before === undefined ? undefined : resolve(flags.before);
const beforeCli = beforeDir === undefined ? undefined : builtCliIn(beforeDir);
const beforeCommit =
  beforeDir === undefined
    ? undefined
    : execFileSync('git', ['-C', beforeDir, 'rev-parse', '--short', 'HEAD']).toString().trim();
const serverNames: readonly ServerName[] = beforeCli ? ['hookguard', 'before', 'baseline'] : ['hookguard', 'baseline'];
const durationSeconds = Number(flags.duration);
const warmupSeconds = Number(flags.warmup);
const rounds = Number(flags.rounds);
const connectionLevels = flags.connections.split(',').filter(Boolean).map(Number);
const argocdHookLevels = flags['argocd-hook-connections'].split(',').filter(Boolean).map(Number);
const nonHookLevels = flags['non-hook-connections'].split(',').filter(Boolean).map(Number);

const { auditRecord } = await fromDist<AuditModule>('http/audit.js');
const { fromDecision } = await fromDist<ResponsesModule>('http/responses.js');
const { Metrics } = await fromDist<MetricsModule>('http/metrics.js');
const { outcomeOf } = await fromDist<AppModule>('http/app.js');

const { DEFAULTS, decide, context, argocdController, mutatePatch } = await builtDecision(ARGOCD_VERSION);
const generateDevCertificate = await builtCertificateGenerator();
const workload = buildWorkload(argocdController, mutatePatch);
const hookRequests = workload.requests.filter((entry) => entry.hook).length;
console.log(
  `bench: ${workload.requests.length} distinct AdmissionReviews (${workload.fixtures} fixtures and 2 non-hook objects, ` +
    `x /mutate,/validate x Helm user,Argo CD controller); Argo CD ${ARGOCD_VERSION}; ${durationSeconds}s per run, ${rounds} rounds, connections ${connectionLevels.join(',')}`,
);

const certificate = writeCertificate(await generateDevCertificate());
const logDir = mkdtempSync(join(tmpdir(), 'hookguard-bench-logs-'));
const logFiles: Record<ServerName, string> = {
  hookguard: join(logDir, 'hookguard.log'),
  baseline: join(logDir, 'baseline.log'),
  before: join(logDir, 'before.log'),
};
const servers = {} as Record<ServerName, ServerProcess>;

try {
  servers.hookguard = await startBenchHookguard(certificate, logFiles.hookguard, { workers: Number(flags.workers) });
  servers.baseline = await startEcho(certificate, logFiles.baseline, flags['batched-baseline']);
  if (beforeCli !== undefined)
    servers.before = await startBenchHookguard(certificate, logFiles.before, { cli: beforeCli });

  const answers = await checkAnswers(servers, workload.requests, certificate.cert);
  console.log(
    `bench: every request answered 200 with its uid by ${serverNames.join(', ')}; hookguard: ${JSON.stringify(answers)}`,
  );

  const runs: LoadRun[] = [];
  const mixes = scenarioMixes(workload.requests);
  const plan = [
    ...connectionLevels.map((connections) => ({ scenario: 'mix' as const, connections })),
    ...argocdHookLevels.map((connections) => ({ scenario: 'argocd-hooks' as const, connections })),
    ...nonHookLevels.map((connections) => ({ scenario: 'non-hooks' as const, connections })),
  ];
  for (const { scenario, connections } of plan) {
    const mix = mixes[scenario];
    for (const name of serverNames) await load(servers[name], mix, connections, warmupSeconds);
    for (let round = 1; round <= rounds; round++) {
      for (const name of serverNames) {
        const cpuBefore = servers[name].cpuMs();
        const result = await load(servers[name], mix, connections, durationSeconds);
        const run = toRun(scenario, name, connections, round, result, servers[name], servers[name].cpuMs() - cpuBefore);
        runs.push(run);
        console.log(
          `  ${scenario} c=${connections} round ${round} ${name.padEnd(9)} ${run.rps.toFixed(0).padStart(6)} req/s  p50 ${run.latencyMs.p50} ms  ` +
            `p97.5 ${run.latencyMs.p97_5} ms  p99 ${run.latencyMs.p99} ms  errors ${run.errors + run.timeouts + run.non2xx}  CPU ${run.cpuMicrosPerRequest} µs/req  RSS ${run.rssMiB} MiB`,
        );
      }
    }
  }
  const peaks = Object.fromEntries(serverNames.map((name) => [name, servers[name].memory().peakRssBytes])) as Record<
    ServerName,
    number
  >;
  for (const name of serverNames) await servers[name].stop();
  const levels = plan.map(({ scenario, connections }) => summarise(scenario, connections, runs, peaks));
  const logBytes = { hookguard: statSync(logFiles.hookguard).size, baseline: statSync(logFiles.baseline).size };

  console.log('bench: micro-benchmark of decide() per request of the mix');
  const micro = runMicro(workload.requests, decide, context, Number(flags['micro-ms']));
  const metrics = new Metrics();
  const addedWork = measureAddedWork(
    workload.requests,
    {
      decide: (request, endpoint) => decide(request, endpoint, context),
      auditLine: (request, endpoint, decision) =>
        JSON.stringify(auditRecord(request, endpoint, decision, 0.1, DEFAULTS.log.auditDetail)),
      answer: fromDecision,
      count: (endpoint, decision, answer) =>
        metrics.request(endpoint, outcomeOf(answer.response), 0.0001, decision.findings),
    },
    Number(flags['micro-ms']) * 10,
  );

  const results: BenchResults = {
    date: new Date().toISOString(),
    machine: describeMachine(),
    settings: {
      durationSeconds,
      warmupSeconds,
      rounds,
      connections: connectionLevels,
      argocdHookConnections: argocdHookLevels,
      nonHookConnections: nonHookLevels,
      argocdVersion: ARGOCD_VERSION,
      pipelining: 1,
      baselineBatched: flags['batched-baseline'],
      hookguardWorkers: Number(flags.workers),
      logSink: `stdout to a file, level ${DEFAULTS.log.level}; bytes per request: hookguard ${perRequest(logBytes.hookguard, runs, 'hookguard')}, baseline ${perRequest(logBytes.baseline, runs, 'baseline')}`,
      ...(beforeDir !== undefined && beforeCommit !== undefined
        ? { before: { dir: beforeDir, commit: beforeCommit } }
        : {}),
    },
    workload: {
      requests: workload.requests.length,
      fixtures: workload.fixtures,
      hookRequests,
      answers,
    },
    levels,
    runs,
    micro,
    addedWork,
    targets: TARGETS,
  };
  const markdown = renderMarkdown(results);
  console.log(`\n${markdown}`);
  if (!flags['no-write']) {
    const dir = join(repoRoot, 'bench', 'results');
    writeFileSync(join(dir, 'latest.json'), `${JSON.stringify(results, null, 2)}\n`);
    writeFileSync(join(dir, 'latest.md'), markdown);
    console.log(`bench: wrote ${join(dir, 'latest.json')} and latest.md`);
  }
} finally {
  for (const server of Object.values(servers)) await server.stop('SIGKILL', 1000);
  certificate.remove();
  rmSync(logDir, { recursive: true, force: true });
}

function load(
  server: ServerProcess,
  requests: readonly BenchRequest[],
  connections: number,
  seconds: number,
): Promise<Result> {
  return autocannon({
    url: server.url,
    connections,
    pipelining: 1,
    duration: seconds,
    // Each connection walks the mix in order, starting where the previous request left off.
    requests: autocannonRequests(requests),
  });
}

function toRun(
  scenario: Scenario,
  server: ServerName,
  connections: number,
  roundNumber: number,
  result: Result,
  process: ServerProcess,
  cpuMs: number,
): LoadRun {
  return {
    scenario,
    server,
    connections,
    round: roundNumber,
    durationSeconds: result.duration,
    requests: result.requests.total,
    rps: round(result.requests.total / result.duration, 1),
    latencyMs: {
      p50: result.latency.p50,
      p97_5: result.latency.p97_5,
      p99: result.latency.p99,
      max: result.latency.max,
      mean: round(result.latency.mean, 2),
    },
    errors: result.errors,
    timeouts: result.timeouts,
    non2xx: result.non2xx,
    cpuMicrosPerRequest: Math.round((cpuMs * 1000) / result.requests.total),
    rssMiB: round(process.memory().rssBytes / MiB, 1),
  };
}

/**
 * Per server, the median of its rounds for each figure: the machine may be shared, and the median of alternating
 * rounds keeps one disturbed round from deciding the ratio. Errors are summed; RSS is the largest seen.
 */
function summarise(
  scenario: Scenario,
  connections: number,
  runs: readonly LoadRun[],
  peaks: Record<ServerName, number>,
): LevelSummary {
  const of = (server: ServerName): ServerSummary => {
    const mine = runs.filter(
      (run) => run.scenario === scenario && run.server === server && run.connections === connections,
    );
    const median = (pick: (run: LoadRun) => number) => {
      const sorted = mine.map(pick).sort((a, b) => a - b);
      const middle = Math.floor(sorted.length / 2);
      return round(
        sorted.length % 2 === 1
          ? (sorted[middle] as number)
          : ((sorted[middle - 1] as number) + (sorted[middle] as number)) / 2,
        2,
      );
    };
    return {
      rps: median((run) => run.rps),
      p50: median((run) => run.latencyMs.p50),
      p97_5: median((run) => run.latencyMs.p97_5),
      p99: median((run) => run.latencyMs.p99),
      errors: mine.reduce((sum, run) => sum + run.errors + run.timeouts + run.non2xx, 0),
      cpuMicrosPerRequest: median((run) => run.cpuMicrosPerRequest),
      rssMiB: Math.max(...mine.map((run) => run.rssMiB)),
      peakRssMiB: round(peaks[server] / MiB, 1),
    };
  };
  const hookguard = of('hookguard');
  const baseline = of('baseline');
  const before = runs.some((run) => run.server === 'before') ? of('before') : undefined;
  const ratio = (a: number, b: number) => round(a / b, 3);
  const ratios = {
    rps: ratio(hookguard.rps, baseline.rps),
    p50: ratio(hookguard.p50, baseline.p50),
    p99: ratio(hookguard.p99, baseline.p99),
    cpu: ratio(hookguard.cpuMicrosPerRequest, baseline.cpuMicrosPerRequest),
    rss: ratio(hookguard.rssMiB, baseline.rssMiB),
  };
  const targets = TARGETS.byScenario[scenario] ?? TARGETS;
  return {
    scenario,
    connections,
    hookguard,
    baseline,
    ratios,
    meetsTargets: { throughput: ratios.rps >= targets.throughputRatioMin, p99: ratios.p99 <= targets.p99RatioMax },
    ...(before
      ? {
          before,
          vsBefore: {
            rps: ratio(hookguard.rps, before.rps),
            p99: ratio(hookguard.p99, before.p99),
            cpu: ratio(hookguard.cpuMicrosPerRequest, before.cpuMicrosPerRequest),
            withinCpuLimit: hookguard.cpuMicrosPerRequest / before.cpuMicrosPerRequest <= TARGETS.cpuVsBeforeMax,
          },
        }
      : {}),
  };
}

function perRequest(bytes: number, runs: readonly LoadRun[], server: ServerName): number {
  // Warm-up requests are logged too, so this slightly overstates; it is a size indication, not a measurement.
  const requests = runs.filter((run) => run.server === server).reduce((sum, run) => sum + run.requests, 0);
  return Math.round(bytes / requests);
}

/** Sends every request of the mix once to each server: both must answer 200 and echo the uid. Counts hookguard's outcomes. */
async function checkAnswers(
  targets: Record<ServerName, ServerProcess>,
  requests: readonly BenchRequest[],
  ca: string,
): Promise<Record<string, number>> {
  const answers: Record<string, number> = { patched: 0, denied: 0, allowedUnchanged: 0 };
  for (const entry of requests) {
    for (const name of serverNames) {
      const { status, body } = await post(targets[name].port, `/${entry.endpoint}`, entry.body, ca);
      const response = (JSON.parse(body) as { response?: { uid?: string; allowed?: boolean; patch?: string } })
        .response;
      if (status !== 200 || response?.uid !== entry.uid)
        throw new Error(`${name} answered ${entry.source} ${entry.endpoint} with ${status}: ${body}`);
      if (name === 'hookguard') {
        if (response.allowed === false) answers.denied! += 1;
        else if (response.patch !== undefined) answers.patched! += 1;
        else answers.allowedUnchanged! += 1;
      }
    }
  }
  return answers;
}

function post(port: number, path: string, body: string, ca: string): Promise<Reply> {
  return requestOnce(
    {
      host: '127.0.0.1',
      port,
      path,
      method: 'POST',
      ca,
      servername: 'localhost',
      headers: { 'content-type': 'application/json' },
    },
    body,
  );
}
