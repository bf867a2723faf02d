// The markdown of one `npm run bench:apiserver` run (bench/results/apiserver-latest.md, and the tables of
// docs/benchmark.md, "What the API server sees").
import type { ApiserverResults, Case } from './apiserver.js';

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
  const lines = [
    `Run ${results.date} on ${machine.nproc} CPUs (${machine.cpu}), Node ${machine.node}, ${machine.os}; load average ` +
      `${results.loadAverage.before} before, ${results.loadAverage.after} after (1, 5, 15 min). Kubernetes ` +
      `${results.kubernetes}. ${settings.objectsPerKind} hook Jobs and ${settings.objectsPerKind} plain Pods per case, ` +
      `created through kube-apiserver in ${settings.rounds} rounds of ${settings.perRound} each, at most ` +
      `${settings.inFlight} in flight, each timed from send to answer; the cases alternate in a rotating order and ` +
      `each figure is the median of the rounds. The hook Jobs: the ${results.fixtures.length} Job fixtures the API ` +
      `server admits with hookguard in front of it, Argo CD's as its controller; hookguard at Argo CD ` +
      `${settings.argocdVersion}, the echo batched; both registered as the chart registers hookguard (only objects ` +
      `with a hook annotation are sent), failurePolicy Fail; the policies are those \`hookguard policies\` prints for ` +
      `the same Argo CD version, bound to their case's namespaces.`,
    '',
    '| object | case | creates | errors | p50 ms | p99 ms | added p50 ms | added p99 ms |',
    '|---|---|---:|---:|---:|---:|---:|---:|',
  ];
  for (const entry of results.cases) {
    const added = entry.case === 'none' ? ['', ''] : [entry.addedP50, entry.addedP99];
    lines.push(
      `| ${entry.kind} | ${CASE_NAMES[entry.case]} | ${entry.creates} | ${entry.errors} | ${entry.p50} | ${entry.p99} | ${added.join(' | ')} |`,
    );
  }
  const { ratio } = results;
  lines.push(
    '',
    `Target: hookguard adds at most ${ratio.max}x what the echo adds to a hook Job's create: ` +
      `p50 ${ratioText(ratio.p50)} (${mark(ratio.metP50)}), p99 ${ratioText(ratio.p99)} (${mark(ratio.metP99)}).`,
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
