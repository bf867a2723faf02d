// The markdown of one `npm run bench:apiserver` run (bench/results/apiserver-latest.md, and the tables of
// docs/benchmark.md, "What the API server sees").
import type { ApiserverResults, Case } from './apiserver.js';
import { round } from './micro.js';

const CASE_NAMES: Record<Case, string> = {
  none: 'no webhook',
  echo: 'the echo',
  hookguard: 'hookguard',
  policies: 'the policies (no webhook)',
};

const mark = (met: boolean) => (met ? 'met' : 'MISSED');
/** A ratio whose denominator was not above zero says nothing: the echo added nothing measurable. */
const ratioText = (value: number) => (Number.isFinite(value) && value >= 0 ? `${value}x` : 'n/a');

export function renderApiserverMarkdown(results: ApiserverResults): string {
  const { machine, settings } = results;
  const auditMode =
    settings.hookguardMode === 'audit' ? ' in audit mode (--hookguard-mode audit: it never patches)' : '';
  const lines = [
    `Run ${results.date} on ${machine.nproc} CPUs (${machine.cpu}), Node ${machine.node}, ${machine.os}; load average ` +
      `${results.loadAverage.before} before, ${results.loadAverage.after} after (1, 5, 15 min). Kubernetes ` +
      `${results.kubernetes}. ${settings.objectsPerKind} hook Jobs and ${settings.objectsPerKind} plain Pods per case ` +
      `and concurrency, created through kube-apiserver in ${settings.rounds} rounds of ${settings.perRound} each, ` +
      `${settings.inFlight.join(' and then ')} in flight, each timed from send to answer; the cases alternate in a ` +
      `rotating order and each figure is the median of the rounds. The hook Jobs: the ${results.fixtures.length} Job ` +
      `fixtures the API server admits with hookguard in front of it, Argo CD's as its controller; hookguard at Argo CD ` +
      `${settings.argocdVersion}${auditMode}, the echo batched; both registered as the chart registers hookguard (only objects ` +
      `with a hook annotation are sent), failurePolicy Fail; the policies are those \`hookguard policies\` prints for ` +
      `the same Argo CD version, bound to their case's namespaces.`,
  ];
  for (const inFlight of settings.inFlight) {
    lines.push(
      '',
      `#### ${inFlight} in flight`,
      '',
      '| object | case | creates | errors | p50 ms | p99 ms | added p50 ms | added p99 ms |',
      '|---|---|---:|---:|---:|---:|---:|---:|',
    );
    for (const entry of results.cases.filter((each) => each.inFlight === inFlight)) {
      const added = entry.case === 'none' ? ['', ''] : [entry.addedP50, entry.addedP99];
      lines.push(
        `| ${entry.kind} | ${CASE_NAMES[entry.case]} | ${entry.creates} | ${entry.errors} | ${entry.p50} | ${entry.p99} | ${added.join(' | ')} |`,
      );
    }
    const ratio = results.ratios.find((each) => each.inFlight === inFlight);
    if (ratio)
      lines.push(
        '',
        `Target: hookguard adds at most ${ratio.max}x what the echo adds to a hook Job's create: ` +
          `p50 ${ratioText(ratio.p50)} (${mark(ratio.metP50)}), p99 ${ratioText(ratio.p99)} (${mark(ratio.metP99)}).`,
      );
    const clocks = results.webhookClock.filter((each) => each.inFlight === inFlight);
    lines.push(
      '',
      `Each webhook call as the API server times it (apiserver_admission_webhook_admission_duration_seconds, from ` +
        `building the AdmissionReview to applying the answer), over every round of the server's own case:`,
      '',
      '| server | webhook | calls | mean ms | within 5 ms | within 25 ms |',
      '|---|---|---:|---:|---:|---:|',
    );
    for (const entry of clocks) {
      const share = (count: number) => `${round((100 * count) / entry.calls, 1)}%`;
      lines.push(
        `| ${CASE_NAMES[entry.server]} | ${entry.type === 'admit' ? 'mutating' : 'validating'} | ${entry.calls} | ` +
          `${entry.meanMs} | ${share(entry.within5ms)} | ${share(entry.within25ms)} |`,
      );
    }
    const clockRatio = (type: string) => {
      const of = (server: string) => clocks.find((entry) => entry.server === server && entry.type === type);
      return ratioText(round((of('hookguard')?.meanMs ?? NaN) / (of('echo')?.meanMs ?? NaN), 2));
    };
    lines.push(
      '',
      `hookguard's mean call against the echo's: mutating ${clockRatio('admit')}, validating ${clockRatio('validating')}.`,
    );
    const cpu = results.cpu.filter((each) => each.inFlight === inFlight);
    const processes = [...new Set(cpu.flatMap((entry) => Object.keys(entry.msPerPair)))];
    if (processes.length > 0) {
      lines.push(
        '',
        "CPU ms per hook Job and plain Pod pair, by process, from the case's first create until its namespace was " +
          "gone (medians of rounds; the webhook is the case's own server):",
        '',
        `| case | ${processes.join(' | ')} | all |`,
        `|---|${processes.map(() => '---:|').join('')}---:|`,
      );
      for (const entry of cpu) {
        const figures = processes.map((name) => entry.msPerPair[name] ?? 0);
        lines.push(
          `| ${CASE_NAMES[entry.case]} | ${figures.map((ms) => round(ms, 2)).join(' | ')} | ` +
            `${round(
              figures.reduce((sum, ms) => sum + ms, 0),
              2,
            )} |`,
        );
      }
    }
  }
  lines.push(
    '',
    `Straight to the webhook port over TLS, open loop at a fixed rate (the hook requests of the bench's mix, to ` +
      `/mutate and /validate) over at most 64 kept-alive connections, ${settings.rateRounds} rounds of ` +
      `${settings.rateSeconds} s per server and rate after a lead-in of ${settings.rateLeadSeconds} s that is not ` +
      `counted, alternating, latency from each request's scheduled time; medians of rounds:`,
    '',
    '| rate /s | hookguard p50 ms | hookguard p99 ms | echo p50 ms | echo p99 ms | p99 difference ms (target) | errors | CPU µs/req (lead-in included) hookguard, echo |',
    '|---:|---:|---:|---:|---:|---:|---:|---:|',
  );
  for (const entry of results.rates) {
    lines.push(
      `| ${entry.rate} | ${entry.hookguard.p50} | ${entry.hookguard.p99} | ${entry.echo.p50} | ${entry.echo.p99} | ` +
        `${entry.p99DifferenceMs} (<= ${results.rateMarginMs} ${mark(entry.met)}) | ` +
        `${entry.hookguard.errors + entry.echo.errors} | ${entry.hookguard.cpuMicrosPerRequest}, ${entry.echo.cpuMicrosPerRequest} |`,
    );
  }
  if (results.leftOut.length > 0) {
    lines.push('', 'Job fixtures left out (not admitted with hookguard in front of the API server):');
    for (const entry of results.leftOut) lines.push(`- ${entry.file}: ${entry.status} ${entry.reason}`);
  }
  if (results.problems.length > 0) {
    lines.push('', 'Problems:');
    for (const problem of results.problems) lines.push(`- ${problem}`);
  }
  return `${lines.join('\n')}\n`;
}
