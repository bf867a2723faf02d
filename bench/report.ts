// The short markdown table of one bench run (bench/results/latest.md, and the figures in docs/benchmark.md).
import type { BenchResults, ServerSummary } from './run.js';
import type { Scenario } from './workload.js';
import { round, type MicroResult } from './micro.js';

const SCENARIOS: Record<Scenario, string> = {
  mix: 'the mix',
  'argocd-hooks': 'Argo CD hooks only',
  'non-hooks': 'non-hooks only',
};

const VARIANTS = [
  ['mutate', 'helm'],
  ['validate', 'helm'],
  ['mutate', 'argocd'],
  ['validate', 'argocd'],
] as const;

export function renderMarkdown(results: BenchResults): string {
  const { machine, settings, workload } = results;
  const lines = [
    `Run ${results.date} on ${machine.nproc} CPUs (${machine.cpu}), Node ${machine.node}, ${machine.os}. ` +
      `${workload.requests} distinct AdmissionReviews (${workload.fixtures} chart fixtures and 2 non-hook objects, to /mutate and /validate, ` +
      `as a Helm user and as the Argo CD controller; Argo CD ${settings.argocdVersion}); hookguard ${describeAnswers(workload.answers)}. ` +
      `autocannon, keep-alive, no pipelining, ${settings.rounds} rounds of ${settings.durationSeconds} s per server and connection count, alternating; figures are the median round.` +
      (settings.baselineBatched
        ? ' The baseline parsed and answered in batches per turn of the event loop, as hookguard does (--batched-baseline).'
        : ''),
    settings.hookguardWorkers > 1
      ? ` hookguard ran as ${settings.hookguardWorkers} processes sharing its ports (--workers, bench/workers.ts); its CPU and memory are theirs summed.`
      : '',
    '',
    '| requests | connections | server | req/s | p50 ms | p97.5 ms | p99 ms | errors | server CPU µs/req | RSS MiB |',
    '|---|---:|---|---:|---:|---:|---:|---:|---:|---:|',
  ];
  const before = settings.before;
  for (const level of results.levels) {
    const rows: [string, ServerSummary][] = [
      ['hookguard', level.hookguard],
      ...(level.before ? [[`before (${before?.commit})`, level.before] as [string, ServerSummary]] : []),
      ['baseline', level.baseline],
    ];
    for (const [name, s] of rows) {
      lines.push(
        `| ${SCENARIOS[level.scenario]} | ${level.connections} | ${name} | ${s.rps.toFixed(0)} | ${s.p50} | ${s.p97_5} | ${s.p99} | ${s.errors} | ${s.cpuMicrosPerRequest} | ${s.rssMiB} |`,
      );
    }
  }
  lines.push(
    '',
    `| requests | connections | throughput hookguard/baseline (target) | p50 ratio | p99 ratio (target) | CPU/req ratio | RSS ratio |`,
    '|---|---:|---:|---:|---:|---:|---:|',
  );
  for (const level of results.levels) {
    const mark = (ok: boolean) => (ok ? 'met' : 'MISSED');
    const targets = results.targets.byScenario[level.scenario] ?? results.targets;
    lines.push(
      `| ${SCENARIOS[level.scenario]} | ${level.connections} | ${level.ratios.rps} (>= ${targets.throughputRatioMin} ${mark(level.meetsTargets.throughput)}) | ${level.ratios.p50} | ${level.ratios.p99} (<= ${targets.p99RatioMax} ${mark(level.meetsTargets.p99)}) | ${level.ratios.cpu} | ${level.ratios.rss} |`,
    );
  }
  if (before) {
    lines.push(
      '',
      `hookguard against the build before the change (${before.commit}, ${before.dir}), same run, alternating:`,
      '',
      `| requests | connections | server CPU/req ratio (limit <= ${results.targets.cpuVsBeforeMax}) | throughput ratio | p99 ratio |`,
      '|---|---:|---:|---:|---:|',
    );
    for (const level of results.levels) {
      if (!level.vsBefore) continue;
      lines.push(
        `| ${SCENARIOS[level.scenario]} | ${level.connections} | ${level.vsBefore.cpu} (${level.vsBefore.withinCpuLimit ? 'within' : 'OVER'}) | ${level.vsBefore.rps} | ${level.vsBefore.p99} |`,
      );
    }
  }
  lines.push(
    '',
    '`decide()` in process, µs per call, and the worst ratio to `JSON.parse` + `JSON.stringify` of the same review:',
    '',
    '| object | mutate, Helm | validate, Helm | mutate, Argo CD | validate, Argo CD | JSON µs | worst ratio |',
    '|---|---:|---:|---:|---:|---:|---:|',
  );
  const sources = [...new Set(results.micro.map((entry) => entry.source))];
  for (const source of sources) {
    const rows = results.micro.filter((entry) => entry.source === source);
    const cell = ([endpoint, requester]: (typeof VARIANTS)[number]) =>
      find(rows, endpoint, requester)?.decideMicros ?? '-';
    const json = Math.max(...rows.map((row) => row.jsonMicros));
    const worst = Math.max(...rows.map((row) => row.ratio));
    lines.push(`| ${source.replace(/\.yaml$/, '')} | ${VARIANTS.map(cell).join(' | ')} | ${json} | ${worst} |`);
  }
  lines.push('', ...describeAddedWork(results));
  return `${lines.join('\n')}\n`;
}

/** hookguard's own work per request against what the throughput target leaves for it. */
function describeAddedWork(results: BenchResults): string[] {
  const { parseMicros, decideMicros, auditLineMicros, answerMicros, metricsMicros } = results.addedWork;
  const total = round(decideMicros + auditLineMicros + answerMicros + metricsMicros, 1);
  const lines = [
    `What hookguard adds per request, in process, as the mean over the mix: \`decide()\` ${decideMicros} µs, the audit line ` +
      `${auditLineMicros} µs, the answer ${answerMicros} µs, metrics ${metricsMicros} µs; ${total} µs in all (\`JSON.parse\` of the review, which ` +
      `the baseline does too: ${parseMicros} µs).`,
  ];
  const mix = results.levels.find((level) => level.scenario === 'mix');
  if (mix) {
    // Throughput >= r x the baseline's, on one saturated core, means CPU per request <= baseline / r.
    const allowance = round(mix.baseline.cpuMicrosPerRequest * (1 / results.targets.throughputRatioMin - 1), 1);
    lines.push(
      `At the server (the mix, ${mix.connections} connections) hookguard used ${round(mix.hookguard.cpuMicrosPerRequest - mix.baseline.cpuMicrosPerRequest, 1)} µs of CPU ` +
        `per request more than the baseline's ${mix.baseline.cpuMicrosPerRequest} µs; a throughput of ${results.targets.throughputRatioMin}x the baseline ` +
        `leaves hookguard about ${allowance} µs for all of its own work.`,
    );
  }
  return lines;
}

function find(rows: readonly MicroResult[], endpoint: string, requester: string): MicroResult | undefined {
  return rows.find((row) => row.endpoint === endpoint && row.requester === requester);
}

function describeAnswers(answers: Record<string, number>): string {
  return `patched ${answers.patched}, denied ${answers.denied} and allowed ${answers.allowedUnchanged} of them unchanged`;
}
