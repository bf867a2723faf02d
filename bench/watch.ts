// `npm run bench:watch`: serve's hook watcher at 15,000 and 150,000 Jobs and Pods each with the same 150 labelled hooks
// of each kind, and at 150,000 with 1,500 (--configs, as objects:hooks), each for --seconds, against the same process
// with the watcher off; measured by bench/watch-measure.ts. Prints the table and writes it to
// bench/results/watch-latest.{json,md}; exits 1 when a run did not see exactly the labelled hooks.
import { writeFileSync } from 'node:fs';
import { cpus, loadavg, release } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { repoRoot } from '../test/support/k8s-tools.js';
import { requests, round1 } from './sweep-measure.js';
import { measureWatch, renderWatchMarkdown, type WatchMeasurement } from './watch-measure.js';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      configs: { type: 'string', default: '15000:150,150000:150,150000:1500' },
      seconds: { type: 'string', default: '40' },
    },
  });
  const seconds = Number(values.seconds);
  const load = () =>
    loadavg()
      .map((value) => value.toFixed(2))
      .join(' ');
  const loadBefore = load();
  const idle = await measureWatch(0, 0, { watcher: false, seconds });
  console.log(`watcher off: peak RSS ${round1(idle.peakRssMiB)} MiB, CPU ${round1(idle.cpuMs / 1000)} s`);
  const measurements: WatchMeasurement[] = [];
  for (const config of values.configs.split(',')) {
    const [objects, hooks] = config.split(':').map(Number) as [number, number];
    const measurement = await measureWatch(objects, hooks, {
      watcher: true,
      seconds,
      weighCluster: true,
      everyFailure: false,
    });
    measurements.push(measurement);
    console.log(
      `${objects} objects, ${hooks} hooks: peak RSS ${round1(measurement.peakRssMiB)} MiB, CPU ` +
        `${round1(measurement.cpuMs / 1000)} s, first sync ${measurement.firstSyncMs} ms, listed ` +
        `${round1(measurement.counts.listBytes / 1e6)} MB, ${requests(measurement.counts)} requests, ` +
        `${measurement.events} of ${measurement.failedHooks} HookFailed Events, ${measurement.problems.length === 0 ? 'exact' : measurement.problems.join('; ')}`,
    );
  }
  const environment =
    `Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, Linux ${release()}; ` +
    `load average ${loadBefore} before, ${load()} after (1, 5, 15 min).`;
  const markdown = renderWatchMarkdown(idle, measurements, environment);
  console.log(`\n${markdown}`);
  const dir = join(repoRoot, 'bench', 'results');
  writeFileSync(join(dir, 'watch-latest.json'), `${JSON.stringify({ environment, idle, measurements }, null, 2)}\n`);
  writeFileSync(join(dir, 'watch-latest.md'), markdown);
  if ([idle, ...measurements].some((measurement) => measurement.problems.length > 0)) process.exitCode = 1;
}

await main();
