// One measured run of `hookguard sweep`, the built CLI in a child process as the CronJob runs it, against a stand-in API
// server holding N Jobs and N Pods of about 5 KB each (test/support/scale-apiserver.ts), with both profiles: wall
// time, peak RSS, bytes listed, requests, and whether it acted on exactly the stuck objects. `npm run bench:sweep`
// (bench/sweep.ts) runs it at each size; test/integration/sweep-scale.test.ts checks it acts right at a small one.
//
// Peak RSS is the child's own: getrusage(RUSAGE_SELF).ru_maxrss, read by process.resourceUsage() in an `exit` handler
// that a preloaded module (--import) installs in the child. That is the number wait4() hands a parent for the child
// (Linux keeps one high-water mark per process), without a wrapper such as /usr/bin/time that the machine may lack.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '../test/support/k8s-tools.js';
import { ScaleApiServer, type ScaleCounts, type ScaleKind, type Shape } from '../test/support/scale-apiserver.js';

export type SweepMode = 'dry-run' | 'apply';

export interface SweepMeasurement {
  objectsPerKind: number;
  mode: SweepMode;
  exitStatus: number | null;
  wallMs: number;
  peakRssMiB: number;
  counts: ScaleCounts;
  /** Candidates, per profile and in total, as the sweep's summary line counts them. */
  candidates: number;
  /** Empty when the run acted on exactly the stuck objects and left every look-alike alone. */
  problems: string[];
}

/** The child writes its resource usage to the file named by this variable when it exits. */
const RUSAGE_FILE = 'HOOKGUARD_BENCH_RUSAGE_FILE';
const REPORT_RUSAGE = `data:text/javascript,${encodeURIComponent(
  `import { writeFileSync } from 'node:fs';
process.on('exit', () => writeFileSync(process.env.${RUSAGE_FILE}, JSON.stringify(process.resourceUsage())));`,
)}`;
const CLI = join(repoRoot, 'dist', 'cli', 'main.js');
const PROFILES = ['--profile', 'argocd-hook', '--profile', 'argo-workflows'];

/**
 * NODE_OPTIONS as the chart's CronJob sets it (its V8 young-generation size bounds the sweep's memory), read from the
 * template, whose env entry is literal text (test/manifests/chart.test.ts checks the rendered CronJob carries it).
 */
export function cronJobNodeOptions(): string {
  const template = readFileSync(join(repoRoot, 'charts', 'hookguard', 'templates', 'sweep-cronjob.yaml'), 'utf8');
  return /- name: NODE_OPTIONS\n\s+value: (\S+)\n/.exec(template)?.[1] ?? '';
}

interface ReportResult {
  kind: ScaleKind;
  name: string;
  profile: string;
  action: string;
}

/** What the run should have done to each object of these shapes, by `kind name profile`. */
function expectedActions(server: ScaleApiServer, mode: SweepMode): Map<string, string> {
  const expected = new Map<string, string>();
  const acted = mode === 'apply' ? 'removed' : 'would-remove';
  const shapes: Array<[ScaleKind, Shape, string, string]> = [
    ['Job', 'stuck-hook', 'argocd-hook', acted],
    ['Pod', 'stuck-hook', 'argocd-hook', acted],
    ['Pod', 'stuck-workflow-pod', 'argo-workflows', acted],
    ['Job', 'running-hook', 'argocd-hook', 'skipped'],
    ['Pod', 'running-hook', 'argocd-hook', 'skipped'],
    ['Pod', 'waiting-workflow-pod', 'argo-workflows', 'skipped'],
  ];
  for (const [kind, shape, profile, action] of shapes)
    for (const index of server.indexesOf(kind, shape))
      expected.set(`${kind} ${server.nameOf(kind, index)} ${profile}`, action);
  return expected;
}

/** Differences between what the run did and what it should have, on the report and on the stand-in. */
function check(server: ScaleApiServer, mode: SweepMode, results: ReportResult[]): string[] {
  const problems: string[] = [];
  const expected = expectedActions(server, mode);
  const seen = new Map(results.map((result) => [`${result.kind} ${result.name} ${result.profile}`, result.action]));
  if (seen.size !== results.length) problems.push('an object was reported twice');
  for (const [key, action] of expected)
    if (seen.get(key) !== action) problems.push(`${key}: expected ${action}, reported ${seen.get(key) ?? 'nothing'}`);
  for (const [key, action] of seen)
    if (!expected.has(key)) problems.push(`${key}: reported ${action}, expected nothing`);
  const acted = [...expected].filter(([, action]) => action !== 'skipped').map(([key]) => key.split(' ')[1]);
  const patched = server.patches.map((patch) => patch.name);
  if (mode === 'dry-run') {
    if (server.counts.patch + server.counts.event > 0 || server.touched > 0)
      problems.push(`a dry run wrote: ${server.counts.patch} patches, ${server.counts.event} events`);
    return problems;
  }
  if (JSON.stringify([...patched].sort()) !== JSON.stringify([...acted].sort()))
    problems.push(`patched ${patched.length} objects, expected exactly the ${acted.length} stuck ones`);
  if (server.patches.some((patch) => patch.status !== 200)) problems.push('a patch was refused');
  if (server.touched !== acted.length) problems.push(`${server.touched} objects changed, expected ${acted.length}`);
  const events = server.events.filter((event) => event.reason === 'FinalizerRemoved').map((event) => event.regarding);
  if (events.length !== server.events.length || JSON.stringify(events.sort()) !== JSON.stringify([...acted].sort()))
    problems.push(`${server.events.length} Events, expected one FinalizerRemoved for each of the ${acted.length}`);
  for (const [kind, shape] of [
    ['Job', 'stuck-hook'],
    ['Pod', 'stuck-hook'],
    ['Pod', 'stuck-workflow-pod'],
  ] as const)
    for (const index of server.indexesOf(kind, shape))
      if (server.object(kind, index) !== undefined)
        problems.push(`${kind} ${server.nameOf(kind, index)} is still there`);
  return problems;
}

/** One run of the built CLI against a fresh stand-in of `objectsPerKind` Jobs and Pods. */
export async function measureSweep(
  objectsPerKind: number,
  mode: SweepMode,
  options: { expireContinueAt?: number[] } = {},
): Promise<SweepMeasurement> {
  const server = await new ScaleApiServer(objectsPerKind).start();
  server.expireContinueAt(...(options.expireContinueAt ?? []));
  const dir = mkdtempSync(join(tmpdir(), 'hookguard-bench-sweep-'));
  try {
    writeFileSync(join(dir, 'kubeconfig'), server.kubeConfigFile());
    const rusageFile = join(dir, 'rusage.json');
    const args = [
      '--import',
      REPORT_RUSAGE,
      CLI,
      'sweep',
      ...PROFILES,
      '--output',
      'json',
      ...(mode === 'apply' ? ['--apply'] : []),
    ];
    const started = process.hrtime.bigint();
    const { stdout, stderr, exitStatus } = await runNode(args, dir, {
      NODE_OPTIONS: cronJobNodeOptions(),
      [RUSAGE_FILE]: rusageFile,
    });
    const wallMs = Number(process.hrtime.bigint() - started) / 1e6;
    const problems: string[] = [];
    if (exitStatus !== 0) problems.push(`exit status ${exitStatus}: ${stderr.slice(-2000)}`);
    let results: ReportResult[] = [];
    try {
      results = (JSON.parse(stdout) as { results: ReportResult[] }).results;
    } catch {
      problems.push(`no JSON report on stdout: ${stdout.slice(0, 500)}`);
    }
    problems.push(...check(server, mode, results));
    const summaryLine = stderr
      .split('\n')
      .filter(Boolean)
      .map(
        (line) => JSON.parse(line) as { msg?: string; summary?: { profiles: Record<string, { candidates: number }> } },
      )
      .find((line) => line.msg === 'sweep finished');
    const candidates = Object.values(summaryLine?.summary?.profiles ?? {}).reduce(
      (sum, tally) => sum + tally.candidates,
      0,
    );
    const { maxRSS } = JSON.parse(readFileSync(rusageFile, 'utf8')) as { maxRSS: number };
    return {
      objectsPerKind,
      mode,
      exitStatus,
      wallMs,
      peakRssMiB: maxRSS / 1024,
      counts: { ...server.counts },
      candidates,
      problems,
    };
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `node ARGS` in `dir`, with `dir/kubeconfig` and nothing of this process's environment but PATH: what it printed. */
export async function runNode(
  args: readonly string[],
  dir: string,
  env: Record<string, string> = {},
): Promise<{ stdout: string; stderr: string; exitStatus: number | null }> {
  const child = spawn(process.execPath, args, {
    cwd: dir,
    env: { PATH: process.env.PATH ?? '', HOME: dir, KUBECONFIG: join(dir, 'kubeconfig'), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString('utf8')));
  const exitStatus = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('close', resolve);
  });
  return { stdout, stderr, exitStatus };
}

export const round1 = (value: number) => Math.round(value * 10) / 10;
export const requests = (counts: ScaleCounts) =>
  counts.list + counts.get + counts.patch + counts.workflow + counts.event + counts.watch + counts.other;

export function renderSweepMarkdown(measurements: readonly SweepMeasurement[], environment: string): string {
  const rows = measurements.map(
    (m) =>
      `| ${m.objectsPerKind.toLocaleString('en-US')} | ${m.mode} | ${round1(m.peakRssMiB)} MiB | ${round1(m.wallMs / 1000)} s | ` +
      `${round1(m.counts.listBytes / 1e6)} MB | ${requests(m.counts)} (${m.counts.list} list, ${m.counts.get} get, ` +
      `${m.counts.workflow} workflow, ${m.counts.patch} patch, ${m.counts.event} event, ${m.counts.watch + m.counts.other} other) | ${m.candidates} | ` +
      `${m.problems.length === 0 ? 'yes' : `NO: ${m.problems.length} problems`} |`,
  );
  return [
    `${environment}`,
    '',
    '| Jobs and Pods, each | run | peak RSS | wall | listed | requests | candidates | exactly the stuck ones |',
    '|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
  ].join('\n');
}
