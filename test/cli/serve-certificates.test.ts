// certificates.mode self in two real `hookguard serve` processes (the built CLI) sharing the stand-in API server: one
// takes the certificates' Lease and creates the Secret, both serve its certificate, and a TLS client that trusts
// only the caBundle written into the webhook configurations accepts both, for the Service's name.
import { X509Certificate } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { FakeApiServer, serviceAccountToken, type KubeItem } from '../support/fake-apiserver.js';
import { eventually } from '../support/log-sink.js';
import { ServeProcess } from '../support/serve-process.js';

const dir = mkdtempSync(join(tmpdir(), 'hookguard-serve-certificates-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const configuration = (kind: string): KubeItem => ({
  apiVersion: 'admissionregistration.k8s.io/v1',
  kind,
  metadata: { name: 'hookguard' },
  webhooks: [
    {
      name: 'hook.hookguard.io',
      clientConfig: { service: { name: 'hookguard', namespace: 'hookguard', path: '/mutate' } },
    },
  ],
});

function presented(port: number, ca: string): Promise<X509Certificate> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port, servername: 'hookguard.hookguard.svc', ca });
    socket.once('secureConnect', () => {
      resolve(new X509Certificate(socket.getPeerX509Certificate()?.raw ?? Buffer.alloc(0)));
      socket.destroy();
    });
    socket.once('error', reject);
  });
}

describe('hookguard serve with certificates.mode self (the built CLI, two replicas)', () => {
  it('one replica creates the Secret and the caBundles under its Lease; both serve the certificate', async () => {
    const fake = await new FakeApiServer().start();
    const replicas: ServeProcess[] = [];
    try {
      fake.put(configuration('MutatingWebhookConfiguration'));
      fake.put(configuration('ValidatingWebhookConfiguration'));
      const kubeconfig = join(dir, 'kubeconfig');
      writeFileSync(
        kubeconfig,
        fake.kubeConfig('hookguard', serviceAccountToken('system:serviceaccount:hookguard:hookguard')).exportConfig(),
      );
      const config = join(dir, 'config.yaml');
      writeFileSync(
        config,
        stringify({
          argocd: { version: '3.0.1' },
          server: { shutdownDelayMs: 0 },
          selfTest: { enabled: false },
          certificates: { mode: 'self', refreshIntervalMs: 200 },
          leaderElection: { leaseDurationSeconds: 2, renewDeadlineMs: 1500, retryPeriodMs: 200 },
        }),
      );
      for (let index = 0; index < 2; index++)
        replicas.push(await ServeProcess.start(['--config', config], { KUBECONFIG: kubeconfig }));
      const [a, b] = replicas as [ServeProcess, ServeProcess];
      for (const replica of replicas)
        expect(replica.lines).toContainEqual(
          expect.objectContaining({
            msg: 'certificates managed by hookguard: waiting for the serving certificate in the Secret',
            secret: 'hookguard/hookguard-tls',
            lease: 'hookguard/hookguard-certificates',
          }),
        );
      const secret = fake.get('Secret', 'hookguard', 'hookguard-tls') as KubeItem & { data: Record<string, string> };
      const ca = Buffer.from(secret.data['ca.crt'] ?? '', 'base64').toString();
      const cert = new X509Certificate(Buffer.from(secret.data['tls.crt'] ?? '', 'base64').toString());
      await eventually(
        () =>
          ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration'].every(
            (kind) =>
              (fake.get(kind, '', 'hookguard')?.webhooks as { clientConfig: { caBundle?: string } }[])[0]?.clientConfig
                .caBundle === secret.data['ca.crt'],
          ),
        'both caBundles written',
      );
      for (const replica of [a, b])
        expect((await presented(replica.port, ca)).fingerprint256).toBe(cert.fingerprint256);
      // Created once, by the Lease holder.
      const writes = fake.requests.filter((request) => request.path.includes('/secrets') && request.method !== 'GET');
      expect(writes.map((request) => request.method)).toEqual(['POST']);
      const lease = fake.get('Lease', 'hookguard', 'hookguard-certificates') as KubeItem & {
        spec: { holderIdentity: string };
      };
      const leaders = replicas.filter((replica) =>
        replica.lines.some(
          (line) => line.msg === 'leading: acquired the Lease' && line.identity === lease.spec.holderIdentity,
        ),
      );
      expect(leaders).toHaveLength(1);
    } finally {
      for (const replica of replicas) replica.stop();
      await fake.stop();
    }
  });

  it('exits 2 naming certificates.mode outside a cluster', async () => {
    await expect(ServeProcess.start([], { HOOKGUARD_CERTIFICATES_MODE: 'self' })).rejects.toThrow(
      'invalid config: certificates.mode: self needs a cluster: there is no kubeconfig and no in-cluster service account',
    );
  });
});
