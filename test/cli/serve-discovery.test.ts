// `hookguard serve` in a real process outside a cluster: the versions the config gives, and what /readyz says of the
// discovery that cannot run. Discovery against the real API server: test/cluster/discovery.test.ts.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { get } from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
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

describe('hookguard serve with discovery (the built CLI)', () => {
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
