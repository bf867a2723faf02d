// The global setup of the vitest project whose tests run the built CLI (dist/): they must never test a build older
// than the source. When an output under dist/ is missing or older than its source under src/ (or than the tsconfig
// files), it builds, and says so; when the build fails, the run stops with the compiler's messages.
import { spawnSync } from 'node:child_process';
import { readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { repoRoot } from './k8s-tools.js';

const sourceDir = join(repoRoot, 'src');
const distDir = join(repoRoot, 'dist');
const buildConfigs = ['tsconfig.json', 'tsconfig.build.json'].map((name) => join(repoRoot, name));

const modifiedMs = (path: string): number | undefined => statSync(path, { throwIfNoEntry: false })?.mtimeMs;

/** Why dist/ is stale (the first output missing or older than what it is built from), or undefined if it is not. */
export function staleBuild(): string | undefined {
  const sources = readdirSync(sourceDir, { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts'))
    .map((entry) => join(entry.parentPath, entry.name));
  for (const source of sources) {
    const output = join(distDir, relative(sourceDir, source)).replace(/\.ts$/, '.js');
    const outputMs = modifiedMs(output);
    const outputName = relative(repoRoot, output);
    if (outputMs === undefined) return `${outputName} is missing`;
    for (const input of [source, ...buildConfigs])
      if (outputMs < (modifiedMs(input) ?? 0)) return `${outputName} is older than ${relative(repoRoot, input)}`;
  }
  return undefined;
}

export function setup(): void {
  const stale = staleBuild();
  if (stale === undefined) return;
  console.log(`dist/ is older than src/ (${stale}): building it (npm run build) for the tests that run it`);
  const tsc = join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc');
  const build = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.build.json'], { cwd: repoRoot, encoding: 'utf8' });
  if (build.status !== 0)
    throw new Error(`dist/ is older than src/ (${stale}), and npm run build failed:\n${build.stdout}${build.stderr}`);
  const still = staleBuild();
  if (still !== undefined) throw new Error(`dist/ is still older than src/ after npm run build: ${still}`);
}
