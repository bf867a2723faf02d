// `hookguard self-test` (what the chart's `helm test` Pod runs) against a real `hookguard serve` and the stand-in
// for kube-apiserver (test/support/fake-apiserver.ts), which calls the webhooks over TLS for the dry run as the API
// server would: exit 0 only when both webhooks were called. And `hookguard chart-hook`'s refusals.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { generateDevCertificate } from '../../src/tls/certificates.js';
import { runCommand } from '../support/command.js';
import { FakeApiServer, serviceAccountToken } from '../support/fake-apiserver.js';
import { ServeProcess } from '../support/serve-process.js';
import { tlsEnv, writeCertificate } from '../support/server-process.js';

const dir = mkdtempSync(join(tmpdir(), 'hookguard-self-test-cli-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const HOOKGUARD_SA = 'system:serviceaccount:hookguard:hookguard';

describe('hookguard self-test (helm test)', () => {
  it('exits 0 when the API server called both webhooks, 1 naming the one it did not', async () => {
    const fake = await new FakeApiServer().start();
    const tls = await generateDevCertificate();
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(kubeconfig, fake.kubeConfig('hookguard', serviceAccountToken(HOOKGUARD_SA)).exportConfig());
    const config = join(dir, 'config.yaml');
    writeFileSync(
      config,
      stringify({ argocd: { version: '3.0.1' }, server: { shutdownDelayMs: 0 }, selfTest: { requestTimeoutMs: 2000 } }),
    );
    const server = await ServeProcess.start(['--config', config], {
      KUBECONFIG: kubeconfig,
      ...tlsEnv(writeCertificate(tls)),
    });
    const endpoint = (caBundle: string) => ({ url: `https://127.0.0.1:${server.port}`, caBundle });
    try {
      const env = { KUBECONFIG: kubeconfig, HOOKGUARD_CONFIG: config, HOME: dir };
      fake.admission = { endpoint: () => endpoint(tls.cert) };
      const called = await runCommand(['self-test'], undefined, env);
      expect([called.status, called.stdout.split(':').slice(0, 2).join(':')]).toEqual([
        0,
        'hookguard self-test in namespace hookguard-selftest: Called',
      ]);
      // The validating webhook's caBundle is stale: the API server cannot call it, and fails open.
      const stale = (await generateDevCertificate()).cert;
      fake.admission = { endpoint: (webhook) => endpoint(webhook === 'validate.hookguard.io' ? stale : tls.cert) };
      const notCalled = await runCommand(['self-test'], undefined, env);
      expect([notCalled.status, notCalled.stdout.split(':').slice(0, 2).join(':')]).toEqual([
        1,
        'hookguard self-test in namespace hookguard-selftest: ValidatingNotCalled',
      ]);
    } finally {
      server.stop();
      await fake.stop();
    }
  }, 30_000);

  it('says there is no cluster, exit 2', async () => {
    const run = await runCommand(['self-test'], undefined, { HOME: dir });
    expect([run.status, run.stderr]).toEqual([
      2,
      'hookguard self-test: no cluster: set KUBECONFIG, or run in a pod with a service account\n',
    ]);
  });
});

describe('hookguard chart-hook', () => {
  it.each([
    [[], 'hookguard chart-hook: chart-hook takes upgrade-crds or delete-webhooks, got nothing\n'],
    [['upgrade-crds'], 'hookguard chart-hook: upgrade-crds takes the CRD files\n'],
    [['delete-webhooks'], 'hookguard chart-hook: delete-webhooks takes a name\n'],
  ])('%j: %s', async (args, message) => {
    const run = await runCommand(['chart-hook', ...args], undefined, { HOME: dir });
    expect([run.status, run.stderr]).toEqual([2, message]);
  });

  it('delete-webhooks deletes both webhook configurations through the API server, and takes those gone as deleted', async () => {
    const fake = await new FakeApiServer().start();
    try {
      fake.putWebhookConfigurations('hookguard');
      const kubeconfig = join(dir, 'kubeconfig-lifecycle');
      writeFileSync(
        kubeconfig,
        fake
          .kubeConfig('hookguard', serviceAccountToken('system:serviceaccount:hookguard:hookguard-lifecycle'))
          .exportConfig(),
      );
      const env = { KUBECONFIG: kubeconfig, HOME: dir };
      const deleted = await runCommand(['chart-hook', 'delete-webhooks', 'hookguard'], undefined, env);
      expect([deleted.status, deleted.stdout, deleted.stderr]).toEqual([
        0,
        'deleted ValidatingWebhookConfiguration and MutatingWebhookConfiguration hookguard\n',
        '',
      ]);
      expect(fake.get('MutatingWebhookConfiguration', '', 'hookguard')).toBeUndefined();
      expect(fake.get('ValidatingWebhookConfiguration', '', 'hookguard')).toBeUndefined();
      const deletes = () =>
        fake.requests.filter((request) => request.method === 'DELETE').map((request) => [request.path, request.status]);
      expect(deletes()).toEqual([
        ['/apis/admissionregistration.k8s.io/v1/validatingwebhookconfigurations/hookguard', 200],
        ['/apis/admissionregistration.k8s.io/v1/mutatingwebhookconfigurations/hookguard', 200],
      ]);
      // Run again (a retried hook, or an uninstall after someone deleted them): 404s count as done.
      const again = await runCommand(['chart-hook', 'delete-webhooks', 'hookguard'], undefined, env);
      expect([again.status, again.stderr]).toEqual([0, '']);
      expect(
        deletes()
          .slice(2)
          .map(([, status]) => status),
      ).toEqual([404, 404]);
    } finally {
      await fake.stop();
    }
  });

  it('refuses a file that is not a CRD before it talks to any cluster', async () => {
    const file = join(dir, 'not-a-crd.yaml');
    writeFileSync(file, 'kind: ConfigMap\n');
    const run = await runCommand(['chart-hook', 'upgrade-crds', file], undefined, { HOME: dir });
    expect([run.status, run.stderr]).toEqual([2, `hookguard chart-hook: ${file}: not a CustomResourceDefinition\n`]);
  });
});
