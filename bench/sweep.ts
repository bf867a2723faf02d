// `npm run bench:sweep`: the sweep's memory and time at 2,000, 20,000 and 100,000 Jobs and Pods each (--sizes), a dry
// run and an --apply run at each (--runs times), measured by bench/sweep-measure.ts. Prints the table and writes it
// to bench/results/sweep-latest.{json,md}; exits 1 when a run did not act on exactly the stuck objects.
import { writeFileSync } from 'node:fs';
import { cpus, loadavg, release } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { repoRoot } from '../test/support/k8s-tools.js';
import { measureSweep, renderSweepMarkdown, requests, round1, type SweepMeasurement } from './sweep-measure.js';

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      sizes: { type: 'string', default: '2000,20000,100000' },
      runs: { type: 'string', default: '1' },
    },
  });
  const sizes = values.sizes.split(',').map(Number);
  const runs = Number(values.runs);
  const measurements: SweepMeasurement[] = [];
  const load = () =>
    loadavg()
      .map((value) => value.toFixed(2))
      .join(' ');
  const loadBefore = load();
  for (const size of sizes) {
    for (const mode of ['dry-run', 'apply'] as const) {
      for (let run = 0; run < runs; run += 1) {
        const measurement = await measureSweep(size, mode);
        measurements.push(measurement);
        console.log(
          `${size} ${mode}: peak RSS ${round1(measurement.peakRssMiB)} MiB, wall ${round1(measurement.wallMs / 1000)} s, ` +
            `listed ${round1(measurement.counts.listBytes / 1e6)} MB, ${requests(measurement.counts)} requests, ` +
            `${measurement.problems.length === 0 ? 'exact' : measurement.problems.slice(0, 5).join('; ')}`,
        );
      }
    }
  }
  const environment =
    `Node ${process.version}, ${cpus().length} × ${cpus()[0]?.model ?? 'CPU'}, Linux ${release()}; ` +
    `load average ${loadBefore} before, ${load()} after (1, 5, 15 min).`;
  const markdown = renderSweepMarkdown(measurements, environment);
  console.log(`\n${markdown}`);
  const dir = join(repoRoot, 'bench', 'results');
  writeFileSync(join(dir, 'sweep-latest.json'), `${JSON.stringify({ environment, measurements }, null, 2)}\n`);
  writeFileSync(join(dir, 'sweep-latest.md'), markdown);
  if (measurements.some((measurement) => measurement.problems.length > 0)) process.exitCode = 1;
}

await main();
