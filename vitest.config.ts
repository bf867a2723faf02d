import { configDefaults, defineConfig } from 'vitest/config';
import { BaseSequencer, type TestSpecification } from 'vitest/node';

// `npm run test:fast`: the unit, golden and property tests, in process, no build needed (under 30 s). It runs them
// without isolation (--no-isolate: one module graph for all the files, not one import of it per file, a third of
// the time): they mock nothing and share no state; `npm test` runs them isolated. The other tests start servers
// and processes and run the built CLI: their project builds dist/ first when it is older than src/, and the helm and
// kubectl they run (test/support/k8s-tools-setup.ts).
//
// Goldens (test/golden/expected/) never write themselves: vitest 4 would write a missing file snapshot outside CI
// (`update: 'new'`) and pass; here a missing or different one fails everywhere, and only `npm run
// test:update-goldens` (`-u`) writes them. A skipped golden test fails the run (test/support/no-skipped-goldens.ts).
const FAST = ['test/unit/**/*.test.ts', 'test/golden/**/*.test.ts', 'test/property/**/*.test.ts'];
// `npm run test:cluster`: against a real control plane (test/cluster/cluster.js, docs/testing.md), started by its
// global setup; `npm test` runs them too. One cluster, two cores: files that change what the cluster's own hookguard
// decides for everyone (the Argo CD and Flux it discovers, its Secret and process, cluster-wide admission policies,
// CRDs) or that put the machine under load take turns, after the others; the others, each test in a namespace of its
// own, run two files at a time, except the timed ones (certificate rotations, leases), which a busy neighbour would
// stretch.
// Between the two, self-test, certificates and leader-election (timed, each with installations or Leases of its own,
// their assertions waiting for the answers they check) run one after another beside argo-sync, which changes the
// Argo CD version the cluster's hookguard knows of (none of the three reads it) and mostly waits.
const CLUSTER = ['test/cluster/**/*.test.ts'];
const clusterFiles = (...names: string[]) => names.map((name) => `test/cluster/${name}.test.ts`);
const CLUSTER_BESIDE = clusterFiles('argo-sync', 'self-test', 'certificates', 'leader-election');
const CLUSTER_ALONE = clusterFiles(
  'chart-policies',
  'discovery',
  'faults-under-load',
  'flux',
  'hook-watcher',
  'operations',
  'policies',
  'upgrade-crds',
);

/**
 * vitest's order (the longest or largest first, within each groupOrder), then argo-sync first of all: in a clean clone
 * the sequencer knows no durations, and two timed files started side by side would leave argo-sync to run alone.
 */
class ArgoSyncFirst extends BaseSequencer {
  override async sort(files: TestSpecification[]): Promise<TestSpecification[]> {
    const sorted = await super.sort(files);
    const first = (file: TestSpecification) => file.moduleId.endsWith('/test/cluster/argo-sync.test.ts');
    return [...sorted.filter(first), ...sorted.filter((file) => !first(file))];
  }
}

export default defineConfig({
  test: {
    update: 'none',
    sequence: { sequencer: ArgoSyncFirst },
    reporters: ['default', './test/support/no-skipped-goldens.ts'],
    testTimeout: 20_000,
    hookTimeout: 60_000,
    projects: [
      { extends: true, test: { name: 'fast', include: FAST } },
      {
        extends: true,
        test: {
          name: 'slow',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...FAST, ...CLUSTER],
          globalSetup: ['test/support/fresh-build.ts', 'test/support/k8s-tools-setup.ts'],
        },
      },
      {
        extends: true,
        test: {
          name: 'cluster',
          include: CLUSTER,
          exclude: [...configDefaults.exclude, ...CLUSTER_BESIDE, ...CLUSTER_ALONE],
          globalSetup: ['test/support/fresh-build.ts', 'test/cluster/support/global-setup.ts'],
          testTimeout: 180_000,
          hookTimeout: 180_000,
          maxWorkers: 2,
          // After the fast and slow tests (group 0, one worker on two cores).
          sequence: { groupOrder: 1 },
        },
      },
      {
        extends: true,
        test: {
          name: 'cluster-beside',
          include: CLUSTER_BESIDE,
          // The same setup: the cluster is started once (cluster.js up finds it running) and stopped by the first.
          globalSetup: ['test/support/fresh-build.ts', 'test/cluster/support/global-setup.ts'],
          testTimeout: 180_000,
          hookTimeout: 180_000,
          maxWorkers: 2,
          // argo-sync on one worker (ArgoSyncFirst), the others one after another on the other.
          sequence: { groupOrder: 2 },
        },
      },
      {
        extends: true,
        test: {
          name: 'cluster-alone',
          include: CLUSTER_ALONE,
          globalSetup: ['test/support/fresh-build.ts', 'test/cluster/support/global-setup.ts'],
          testTimeout: 180_000,
          hookTimeout: 180_000,
          fileParallelism: false,
          sequence: { groupOrder: 3 },
        },
      },
    ],
  },
});
