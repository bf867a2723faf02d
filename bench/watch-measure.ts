// One measured run of serve's hook watcher (bench/watch-child.ts: the built watcher in a child process, with serve's
// default settings) against a stand-in API server of N Jobs and N Pods of about 5 KB each, H of each kind carrying
// hookguard's label (test/support/scale-apiserver.ts), for a fixed window: peak RSS and CPU time of the child, time to
// its first sync (both lists answered), bytes listed, requests, Events posted, and whether it saw exactly the labelled
// hooks and posted one HookFailed Event on exactly each failed one. The baseline is the same child with the watcher off.
// `npm run bench:watch` (bench/watch.ts) runs it; test/integration/watch-scale.test.ts checks it at a small size.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { repoRoot } from '../test/support/k8s-tools.js';
import { ScaleApiServer, type ScaleCounts, type ScaleKind } from '../test/support/scale-apiserver.js';
import { requests, round1, runNode } from './sweep-measure.js';

const CHILD = join(repoRoot, 'dist-bench', 'bench', 'watch-child.js');

export interface WatchMeasurement {
  objectsPerKind: number;
  hooksPerKind: number;
  watcher: boolean;
  seconds: number;
  exitStatus: number | null;
  peakRssMiB: number;
  cpuMs: number;
  /** From the watcher's start (its modules loaded) to the second list answered (Jobs and Pods), as its log says. */
  firstSyncMs: number | undefined;
  /** Objects each list returned, as the watcher logged them. */
  listed: Partial<Record<ScaleKind, number>>;
  counts: ScaleCounts;
  /** Bytes all Jobs and Pods of the stand-in weigh as JSON: what a list without the label selector would carry. */
  clusterBytes: number;
  events: number;
  /** The labelled hooks that failed: each should get one HookFailed Event. */
  failedHooks: number;
  /** Empty when the watcher saw exactly the labelled hooks and posted one HookFailed on exactly each failed one. */
  problems: string[];
}

interface LogLine {
  msg?: string;
  time?: number;
  target?: string;
  objects?: number;
  startedAtMs?: number;
  usage?: NodeJS.ResourceUsage;
}

/**
 * What is wrong with the run: a list that did not return exactly the labelled hooks, an Event that is not one HookFailed
 * on a failed hook or is there twice; with `everyFailure`, a failed hook without its Event. The watcher explains at most
 * 20 hooks a pass (one pass every 10 s, or on a change), so within a short window not every failed hook of a large
 * cluster has its Event yet: the bench reports how many do.
 */
function check(server: ScaleApiServer, measurement: WatchMeasurement, everyFailure: boolean): string[] {
  const problems: string[] = [];
  for (const kind of ['Job', 'Pod'] as const) {
    const expected = server.hookIndexes(kind).length;
    if (measurement.listed[kind] !== expected)
      problems.push(`listed ${measurement.listed[kind] ?? 'no'} hook ${kind}s, expected ${expected}`);
  }
  const failed = (['Job', 'Pod'] as const).flatMap((kind) =>
    server.hookIndexes(kind, 'failed').map((index) => server.nameOf(kind, index)),
  );
  const posted = server.events.map((event) => `${event.reason} ${event.regarding}`);
  const expected = new Set(failed.map((name) => `HookFailed ${name}`));
  const wrong = posted.filter((event) => !expected.has(event));
  if (wrong.length > 0) problems.push(`Events not on a failed hook: ${wrong.slice(0, 3).join(', ')}`);
  if (new Set(posted).size !== posted.length) problems.push('an Event was posted twice');
  if (everyFailure && posted.length !== expected.size)
    problems.push(`posted ${posted.length} Events, expected one on each of the ${expected.size} failed hooks`);
  return problems;
}

/** The bytes of every generated object as JSON (what an unfiltered list's items weigh). */
function clusterBytes(server: ScaleApiServer): number {
  let bytes = 0;
  for (const kind of ['Job', 'Pod'] as const)
    for (let index = 0; index < server.objectsPerKind; index += 1)
      bytes += Buffer.byteLength(JSON.stringify(server.object(kind, index)));
  return bytes;
}

export async function measureWatch(
  objectsPerKind: number,
  hooksPerKind: number,
  options: { watcher: boolean; seconds: number; weighCluster?: boolean; everyFailure?: boolean },
): Promise<WatchMeasurement> {
  const server = await new ScaleApiServer(objectsPerKind, { hooksPerKind }).start();
  const dir = mkdtempSync(join(tmpdir(), 'hookguard-bench-watch-'));
  try {
    writeFileSync(join(dir, 'kubeconfig'), server.kubeConfigFile());
    const { stdout, stderr, exitStatus } = await runNode(
      [CHILD, '--seconds', String(options.seconds), ...(options.watcher ? [] : ['--off'])],
      dir,
    );
    const lines = stdout
      .split('\n')
      .filter((line) => line.startsWith('{'))
      .map((line) => JSON.parse(line) as LogLine);
    const result = lines.find((line) => line.msg === 'bench result');
    const synced = lines.filter((line) => line.msg === 'discovery listed');
    const listed: Partial<Record<ScaleKind, number>> = {};
    for (const line of synced) listed[line.target === 'hook Jobs' ? 'Job' : 'Pod'] = line.objects ?? 0;
    const measurement: WatchMeasurement = {
      objectsPerKind,
      hooksPerKind,
      watcher: options.watcher,
      seconds: options.seconds,
      exitStatus,
      peakRssMiB: (result?.usage?.maxRSS ?? 0) / 1024,
      cpuMs: ((result?.usage?.userCPUTime ?? 0) + (result?.usage?.systemCPUTime ?? 0)) / 1000,
      firstSyncMs:
        synced.length === 2 && result?.startedAtMs !== undefined
          ? Math.max(...synced.map((line) => line.time ?? 0)) - result.startedAtMs
          : undefined,
      listed,
      counts: { ...server.counts },
      clusterBytes: options.weighCluster ? clusterBytes(server) : 0,
      events: server.events.length,
      failedHooks: server.hookIndexes('Job', 'failed').length + server.hookIndexes('Pod', 'failed').length,
      problems: [],
    };
    if (exitStatus !== 0 || result === undefined)
      measurement.problems.push(`exit status ${exitStatus}: ${stderr.slice(-2000)}`);
    if (options.watcher) measurement.problems.push(...check(server, measurement, options.everyFailure ?? true));
    return measurement;
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

const mb = (bytes: number) => `${round1(bytes / 1e6)} MB`;
const times = (value: number, base: number) => `×${(value / base).toFixed(2)}`;

export function renderWatchMarkdown(
  idle: WatchMeasurement,
  measurements: readonly WatchMeasurement[],
  environment: string,
): string {
  const rows = measurements.map(
    (m) =>
      `| ${m.objectsPerKind.toLocaleString('en-US')} | ${m.hooksPerKind.toLocaleString('en-US')} | ` +
      `${round1(m.peakRssMiB)} MiB (${times(m.peakRssMiB, idle.peakRssMiB)}) | ` +
      `${round1(m.cpuMs / 1000)} s (${times(m.cpuMs, idle.cpuMs)}) | ${m.firstSyncMs ?? '?'} ms | ` +
      `${mb(m.counts.listBytes)} of ${mb(m.clusterBytes)} (${((100 * m.counts.listBytes) / m.clusterBytes).toFixed(2)}%) | ` +
      `${requests(m.counts)} (${m.counts.list} list, ${m.counts.watch} watch, ${m.counts.event} event, ` +
      `${m.counts.other} other) | ${m.events} of ${m.failedHooks} | ` +
      `${m.problems.length === 0 ? 'yes' : `NO: ${m.problems.join('; ')}`} |`,
  );
  const [small, large] = measurements;
  const sameHooks =
    small && large && small.hooksPerKind === large.hooksPerKind
      ? [
          '',
          `${large.objectsPerKind.toLocaleString('en-US')} against ${small.objectsPerKind.toLocaleString('en-US')} Jobs and Pods, ` +
            `the same ${small.hooksPerKind} hooks: peak RSS ${times(large.peakRssMiB, small.peakRssMiB)}, ` +
            `CPU ${times(large.cpuMs, small.cpuMs)}, bytes listed ${times(large.counts.listBytes, small.counts.listBytes)}, ` +
            `requests ${times(requests(large.counts), requests(small.counts))}.`,
        ]
      : [];
  return [
    environment,
    '',
    `Each run: ${idle.seconds} s of the watcher as serve runs it (defaults), in its own process; the baseline (×1.00) is ` +
      `the same process with the watcher off: peak RSS ${round1(idle.peakRssMiB)} MiB, CPU ${round1(idle.cpuMs / 1000)} s.`,
    '',
    '| Jobs and Pods, each | labelled hooks, each | peak RSS | CPU | first sync | listed (of all Jobs and Pods) | requests | HookFailed Events (of failed hooks) | exactly the hooks |',
    '|---|---|---|---|---|---|---|---|---|',
    ...rows,
    '',
    '"Exactly the hooks": each list returned exactly the labelled hooks, and each Event posted is the one HookFailed of a ' +
      'failed hook. The watcher explains at most 20 hooks a pass (a pass every 10 s, or on a change), so a window shows ' +
      'the Events of part of a large cluster’s failures. Listed: the bytes of the list answers, against what all Jobs ' +
      'and Pods weigh as JSON (a list without the label selector). First sync: from the watcher’s start to both lists ' +
      'answered. Requests: over the whole window (other: Argo CD Application lookups, 404 here).',
    ...sameHooks,
    '',
  ].join('\n');
}
