// The global setup of the cluster tests (`npm run test:cluster`, and `npm test` where Go is installed): it builds what
// is missing of test/cluster/cluster.js's tools (the cluster's, and the oracles only these tests run), starts the real
// control plane, and stops it after the run if it started it (a cluster that `npm run cluster:up` left running is
// used as it is, and left running). Without Go the tests skip, but under CI=true, where a skipped suite would pass a
// change nobody tested against Kubernetes, the run fails.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { repoRoot } from '../../support/k8s-tools.js';
import { goOnPath } from '../cluster.js';

declare module 'vitest' {
  export interface ProvidedContext {
    /** Why the cluster tests cannot run here, or '' when the cluster is up. */
    clusterUnavailable: string;
  }
}

const clusterScript = join(repoRoot, 'test', 'cluster', 'cluster.js');
const statePath = join(repoRoot, '.cluster', 'state.json');

/**
 * Runs cluster.js without blocking this process: vitest runs the global teardown while it is still stopping the last
 * test file's worker, and a `down` that held the event loop past that stop's 10 s teardownTimeout (stopping the
 * control plane, removing .cluster) made it report "[vitest-pool]: Timeout terminating forks worker for test files …"
 * of a worker that had exited at once.
 */
async function runCluster(command: 'build' | 'up' | 'down'): Promise<void> {
  const child = spawn(process.execPath, [clusterScript, command], { cwd: repoRoot, stdio: 'inherit' });
  const [status] = (await once(child, 'close')) as [number | null];
  if (status !== 0) throw new Error(`node test/cluster/cluster.js ${command} failed (exit ${status})`);
}

export default async function setup(project: TestProject): Promise<(() => Promise<void>) | undefined> {
  if (!goOnPath()) {
    if (process.env.CI === 'true')
      throw new Error(
        'the cluster tests need Go (they build Kubernetes from its Go modules), and CI=true: go is not on PATH',
      );
    project.provide('clusterUnavailable', 'go is not on PATH: the cluster tests are skipped (CI runs them)');
    return undefined;
  }
  const wasRunning = existsSync(statePath);
  // Every tool, the test oracles included (`up` builds only the cluster's own); `up` links them into .cluster/bin.
  await runCluster('build');
  await runCluster('up');
  project.provide('clusterUnavailable', '');
  return async () => {
    const refused = refusedCalls();
    if (!wasRunning) await runCluster('down');
    if (refused.length > 0)
      throw new Error(
        `the chart's RBAC refused hookguard ${refused.length} call(s) during the cluster tests:\n${refused.slice(0, 10).join('\n')}`,
      );
  };
}

/** hookguard's log lines that tell of a call the API server refused (403): its RBAC from the chart was not enough. */
function refusedCalls(): string[] {
  const log = join(repoRoot, '.cluster', 'logs', 'hookguard.log');
  if (!existsSync(log)) return [];
  return readFileSync(log, 'utf8')
    .split('\n')
    .filter((line) => /HTTP 403|HTTP-Code: 403|\bforbidden\b/i.test(line));
}
