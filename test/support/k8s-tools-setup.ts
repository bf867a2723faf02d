// The global setup of the slow tests: it builds the helm, Helm 3 and kubectl they run (test/support/k8s-tools.ts) with
// test/cluster/cluster.js, once, before vitest starts the workers that run the test files side by side and only look
// the binaries up. From the cache it takes under a second; on a new machine it compiles them (about 15 minutes with
// the module downloads). Without Go it warns, and the tests that need a binary not built before skip (toolsOrSkip) or
// fail naming it; under CI=true, as in the cluster tests' global setup, the run fails here instead.
import { ALL_TOOLS, build, goOnPath } from '../cluster/cluster.js';
import { K8S_TOOLS } from './k8s-tools.js';

export function setup(): void {
  if (!goOnPath()) {
    const why = 'go is not on PATH: the slow tests run helm and kubectl built from their Go modules';
    if (process.env.CI === 'true') throw new Error(`${why}, and CI=true`);
    console.warn(`${why}: those built before serve, and the tests that need one not built are skipped or fail`);
    return;
  }
  // In `npm test` the cluster tests' global setup comes next and builds the other tools: on a new machine their modules
  // download while these compile.
  build(K8S_TOOLS, { alsoFetch: ALL_TOOLS });
}
