// `hookguard serve` in a real process, discovering Argo CD from a stand-in for kube-apiserver
// (test/support/fake-apiserver.ts) through a kubeconfig file, as it would in a cluster.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { get } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { controller, readyWithController } from '../support/argocd-controllers.js';
import { FakeApiServer } from '../support/fake-apiserver.js';
import { eventually } from '../support/log-sink.js';
import { ServeProcess } from '../support/serve-process.js';

const dir = mkdtempSync(join(tmpdir(), 'hookguard-serve-discovery-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function readyz(port: number): Promise<{ status: number | undefined; body: unknown }> {
  return new Promise((resolve, reject) => {
    get({ host: '127.0.0.1', port, path: '/readyz', rejectUnauthorized: false }, (response) => {
      let text = '';
      response.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
      response.on('end', () => resolve({ status: response.statusCode, body: JSON.parse(text) as unknown }));
    }).on('error', reject);
  });
}

const watching = (body: unknown) => (body as { discovery?: { watching?: boolean } }).discovery?.watching === true;

describe('hookguard serve with discovery (the built CLI)', () => {
  it('discovers the version, follows an upgrade, stays ready while the API server is down, and exits on SIGTERM', async () => {
    const server = await new FakeApiServer().start();
    server.put(controller('argocd', 'quay.io/argoproj/argocd:v2.14.3'));
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(kubeconfig, server.kubeConfig('hookguard').exportConfig());
    const config = join(dir, 'config.yaml');
    // No drain delay on SIGTERM: no endpoints controller needs time to drop this process.
    // The self-test has a test of its own (test/cluster/self-test.test.ts).
    writeFileSync(
      config,
      'discovery:\n  backoffInitialMs: 20\n  backoffMaxMs: 100\nserver:\n  shutdownDelayMs: 0\nselfTest:\n  enabled: false\nrules:\n  meshSidecar:\n    action: "off"\n  minRuntime:\n    openshift: "true"\n',
    );
    const serve = await ServeProcess.start(['--config', config], { KUBECONFIG: kubeconfig });
    const { port } = serve;
    const logged = (msg: string) => serve.waitForLog((line) => line.msg === msg);
    try {
      expect(await logged('hookguard ready')).toMatchObject({ argocdVersion: 'discovered per instance' });
      expect(await logged('Argo CD discovery on')).toMatchObject({
        from: `kubeconfig ${kubeconfig}`,
        labelSelector: 'app.kubernetes.io/component=application-controller,app.kubernetes.io/part-of=argocd',
        // Where Argo CD is installed, by default: upstream's namespace and OpenShift GitOps'.
        namespaces: ['argocd', 'openshift-gitops'],
      });
      expect(await logged('Argo CD instance discovered')).toMatchObject({ namespace: 'argocd', version: '2.14.3' });
      // That line is written when the lists are in; the watches open after it.
      await eventually(async () => watching((await readyz(port)).body), 'discovery watching');
      expect(await readyz(port)).toEqual({
        status: 200,
        body: {
          ...readyWithController('2.14.3', 'quay.io/argoproj/argocd:v2.14.3'),
          // flux-system holds no helm-controller here (its watch may still be opening).
          flux: expect.objectContaining({ enabled: true, helmControllers: [] }),
          namespaces: { enabled: false, reason: 'rules.meshSidecar.action is off' },
          apiDiscovery: { enabled: false, reason: 'rules.minRuntime.openshift is true' },
          selfTest: { enabled: false, reason: 'selfTest.enabled is false' },
        },
      });

      server.put(controller('argocd', 'quay.io/argoproj/argocd:v2.14.4'));
      expect(await logged('Argo CD instance version changed')).toMatchObject({
        namespace: 'argocd',
        version: '2.14.4',
        previousVersion: '2.14.3',
      });

      await server.stop();
      expect(await logged('lost the watch on the API server; using the last known Argo CD versions')).toMatchObject({
        level: 40,
      });
      const whileDown = await readyz(port);
      expect(whileDown).toMatchObject({
        status: 200,
        body: { discovery: { synced: true, watching: false, instances: [{ version: '2.14.4' }] } },
      });

      // Exits only once discovery has stopped: an open watch would keep the process alive.
      serve.child.kill('SIGTERM');
      expect(await serve.exitWithin(5000)).toBe(0);
    } finally {
      serve.stop();
      await server.stop();
    }
  });

  it('serves outside a cluster with the versions the config gives, and says so on /readyz and in the log', async () => {
    const config = join(dir, 'config-off.yaml');
    writeFileSync(
      config,
      [
        'argocd:',
        '  instanceVersions:',
        '    openshift-gitops: 3.1.0',
        '  remote:',
        '    system:serviceaccount:kube-system:argocd-manager: 3.4.0',
        'server:',
        '  shutdownDelayMs: 0',
        '',
      ].join('\n'),
    );
    // No KUBECONFIG, no in-cluster service account, and a HOME without ~/.kube/config.
    const serve = await ServeProcess.start(['--config', config], { HOME: dir });
    try {
      expect(
        await serve.waitForLog(
          (line) => line.msg === 'remote Argo CD identities: judged with their configured versions',
        ),
      ).toMatchObject({ remote: { 'system:serviceaccount:kube-system:argocd-manager': '3.4.0' } });
      await serve.waitForLog((line) => line.msg === 'hookguard ready');
      expect(await readyz(serve.port)).toEqual({
        status: 200,
        body: {
          status: 'ready',
          discovery: {
            enabled: false,
            reason: 'no kubeconfig and no in-cluster service account: not running in a cluster',
            instances: [
              {
                namespace: 'openshift-gitops',
                version: '3.1.0',
                source: 'argocd.instanceVersions: 3.1.0; no controller discovered',
              },
            ],
          },
          flux: {
            enabled: false,
            reason: 'no kubeconfig and no in-cluster service account: not running in a cluster',
            helmControllers: [],
          },
          namespaces: {
            enabled: false,
            reason: 'no kubeconfig and no in-cluster service account: not running in a cluster',
          },
          apiDiscovery: {
            enabled: false,
            reason: 'no kubeconfig and no in-cluster service account: not running in a cluster',
          },
          selfTest: {
            enabled: false,
            reason: 'no kubeconfig and no in-cluster service account: not running in a cluster',
          },
        },
      });
      serve.child.kill('SIGTERM');
      expect(await serve.exitWithin(5000)).toBe(0);
    } finally {
      serve.stop();
    }
  });
});
