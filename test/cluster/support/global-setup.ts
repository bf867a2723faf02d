// The global setup of the cluster tests (`npm run test:cluster`, and `npm test` where Go is installed): it starts the
// real control plane of test/cluster/cluster.js, building what is missing, and stops it after the run if it started
// it (a cluster that `npm run cluster:up` left running is used as it is, and left running). Without Go the tests
// skip, but under CI=true, where a skipped suite would pass a change nobody tested against Kubernetes, the run fails.
import { spawnSync } from 'node:child_process';
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

function runCluster(command: 'up' | 'down'): void {
  const result = spawnSync(process.execPath, [clusterScript, command], { cwd: repoRoot, stdio: 'inherit' });
  if (result.status !== 0) throw new Error(`node test/cluster/cluster.js ${command} failed (exit ${result.status})`);
}

export default function setup(project: TestProject): (() => void) | undefined {
  if (!goOnPath()) {
    if (process.env.CI === 'true')
      throw new Error(
        'the cluster tests need Go (they build Kubernetes from its Go modules), and CI=true: go is not on PATH',
      );
    project.provide('clusterUnavailable', 'go is not on PATH: the cluster tests are skipped (CI runs them)');
    return undefined;
  }
  const wasRunning = existsSync(statePath);
  runCluster('up');
  project.provide('clusterUnavailable', '');
  return () => {
    const refused = refusedCalls();
    if (!wasRunning) runCluster('down');
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
