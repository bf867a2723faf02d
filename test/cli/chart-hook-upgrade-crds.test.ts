// `hookguard chart-hook upgrade-crds` (the chart's pre-upgrade hook) when no API server answers: a fault the real one
// (test/cluster/upgrade-crds.test.ts, where the rest of this hook is tested) is not asked to make. The stand-in is
// started for an address and stopped before the hook runs. The CRD applied is the one the hook's Job mounts: the
// chart's `hookguard-crds` ConfigMap, rendered by helm.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, expect, it } from 'vitest';
import { runCommand } from '../support/command.js';
import { FakeApiServer } from '../support/fake-apiserver.js';
import { find, renderChart } from '../support/manifests.js';

const dir = mkdtempSync(join(tmpdir(), 'hookguard-upgrade-crds-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const NAME = 'hookguards.hookguard.io';
const PATH = `/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${NAME}`;

it('upgrade-crds with no API server answering says the request failed and why, exit 1', async () => {
  const crdFile = join(dir, `${NAME}.yaml`);
  writeFileSync(crdFile, find(await renderChart(), 'ConfigMap', 'hookguard-crds').data[`${NAME}.yaml`] as string);
  const fake = await new FakeApiServer().start();
  const kubeconfig = join(dir, 'kubeconfig');
  // No request gets through, so the kubeconfig needs no identity.
  writeFileSync(kubeconfig, fake.kubeConfig('hookguard').exportConfig());
  await fake.stop();
  const run = await runCommand(['chart-hook', 'upgrade-crds', crdFile], undefined, {
    KUBECONFIG: kubeconfig,
    HOME: dir,
  });
  expect([run.status, run.stdout, run.stderr]).toEqual([
    1,
    '',
    `hookguard chart-hook: cannot apply CustomResourceDefinition ${NAME} (kubeconfig ${kubeconfig}): request to ${fake.url}${PATH}?fieldManager=hookguard-chart&force=true failed, reason: connect ECONNREFUSED 127.0.0.1:${fake.port}\n`,
  ]);
});
