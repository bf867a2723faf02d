// hookguard operated as the chart installs it, on the real control plane: the caBundle it writes is the one the API
// server trusts, the self-test writes the HookGuard status, two replicas share one Lease and serve the same
// certificate, neither a new CA after the Secret is lost nor a stale trust record fails a create, a hung hookguard
// costs a create at most the chart's timeoutSeconds under its failurePolicy (Ignore). (The sweep freeing a namespace
// stuck deleting on hook finalizers, as the chart's sweep identity: test/cluster/sweep.test.ts.)
import { spawn, type ChildProcess } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { bundleCertificates } from '../../src/tls/pem.js';
import { cliPath } from '../support/cli.js';
import { freePort } from '../support/serve-process.js';
import {
  clusterDir,
  clusterState,
  deleteNamespace,
  describeCluster,
  kubectl,
  kubectlJson,
  newNamespace,
  waitUntil,
} from './support/cluster.js';

type Json = Record<string, any>;

/** A hook Job hookguard mutates (a cleanup hook with kubectl delete): what it stored shows whether hookguard was called. */
function cleanupHook(name: string): string {
  return JSON.stringify({
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name, annotations: { 'helm.sh/hook': 'post-delete' } },
    spec: {
      template: {
        spec: {
          restartPolicy: 'Never',
          containers: [
            { name: 'cleanup', image: 'bitnami/kubectl:1.32.3', command: ['kubectl', 'delete', 'configmap', 'foo'] },
          ],
        },
      },
    },
  });
}

async function createCleanupHook(ns: string, name: string): Promise<{ command: string[]; millis: number }> {
  const started = Date.now();
  const created = JSON.parse(await kubectl(['create', '-n', ns, '-o', 'json', '-f', '-'], cleanupHook(name))) as Json;
  return { command: created.spec.template.spec.containers[0].command as string[], millis: Date.now() - started };
}

/** The annotation where the keeper records the CAs it made (src/tls/trust.ts TRUST_ANNOTATION). */
const TRUST_RECORD = 'hookguard.io/certificate-authorities';

const MUTATED = ['kubectl', 'delete', 'configmap', 'foo', '--ignore-not-found'];

/** A field of the Secret where hookguard keeps its CA and serving certificate, as PEM. */
async function secretField(key: string): Promise<string> {
  const base64 = await kubectl([
    'get',
    'secret',
    'hookguard-tls',
    '-n',
    'hookguard',
    '-o',
    `jsonpath={.data.${key.replace('.', '\\.')}}`,
  ]);
  return Buffer.from(base64, 'base64').toString('utf8');
}

/** The caBundle of the first webhook of hookguard's configuration of this kind, as PEM. */
async function caBundleOf(kind: string): Promise<string> {
  const base64 = await kubectl(['get', kind, 'hookguard', '-o', 'jsonpath={.webhooks[0].clientConfig.caBundle}']);
  return Buffer.from(base64, 'base64').toString('utf8');
}

/** The fingerprint of the serving certificate in the Secret. */
async function secretCertificate(): Promise<string> {
  return new X509Certificate(await secretField('tls.crt')).fingerprint256;
}

/** The fingerprint of the certificate hookguard serves on port. */
function servedCertificate(port: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(
      { host: '127.0.0.1', port, servername: 'hookguard.hookguard.svc', rejectUnauthorized: false },
      () => {
        resolve(socket.getPeerX509Certificate()?.fingerprint256 ?? '');
        socket.destroy();
      },
    );
    socket.on('error', reject);
  });
}
const AS_WRITTEN = ['kubectl', 'delete', 'configmap', 'foo'];

describeCluster('hookguard operated on the real control plane', () => {
  let ns = '';
  const extra: ChildProcess[] = [];
  beforeAll(async () => {
    ns = await newNamespace('ops');
  });
  afterAll(async () => {
    for (const child of extra) child.kill('SIGKILL');
    await deleteNamespace(ns);
  });

  it('the API server calls hookguard over TLS with the caBundle hookguard wrote, and keeps its patch', async () => {
    expect(await caBundleOf('mutatingwebhookconfiguration')).toContain((await secretField('ca.crt')).trim());
    expect((await createCleanupHook(ns, 'trusted')).command).toEqual(MUTATED);
  });

  it('the self-test writes the HookGuard status', async () => {
    const status = await waitUntil(
      'the HookGuard status to say Ready',
      async () => {
        const hookguard = await kubectlJson<Json>(['get', 'hookguard', 'hookguard']);
        const ready = (hookguard.status?.conditions as Json[] | undefined)?.find((c) => c.type === 'Ready');
        return ready?.status === 'True' ? hookguard.status : undefined;
      },
      120,
    );
    expect(status.mode).toBe('enforce');
    expect((status.conditions as Json[]).find((c) => c.type === 'WebhookCalled')?.status).toBe('True');
  });

  it('two replicas share one real Lease, and the second serves too', async () => {
    const [secondPort, secondProbePort] = [await freePort(), await freePort()];
    const second = spawn(process.execPath, [cliPath, 'serve'], {
      env: {
        PATH: process.env.PATH ?? '',
        KUBECONFIG: join(clusterDir, 'hookguard', 'kubeconfig'),
        HOOKGUARD_CONFIG: join(clusterDir, 'hookguard', 'config.yaml'),
        HOOKGUARD_HOST: '127.0.0.1',
        HOOKGUARD_PORT: String(secondPort),
        HOOKGUARD_PROBE_PORT: String(secondProbePort),
      },
      stdio: 'ignore',
    });
    extra.push(second);
    const lease = await waitUntil('the Lease to name a holder', async () => {
      const got = await kubectlJson<Json>(['get', 'lease', 'hookguard', '-n', 'hookguard']);
      return got.spec?.holderIdentity ? got : undefined;
    });
    // The second replica serves with the certificate the first keeps in the Secret, as a candidate for the Lease.
    await waitUntil(
      'the second replica to be ready',
      async () => (await fetch(`http://127.0.0.1:${secondProbePort}/readyz`)).status === 200,
    );
    expect(await servedCertificate(secondPort)).toBe(await secretCertificate());
    await new Promise((resolve) => setTimeout(resolve, 5000));
    const again = await kubectlJson<Json>(['get', 'lease', 'hookguard', '-n', 'hookguard']);
    // The first replica has held it since the cluster started; the second waits.
    expect(again.spec.holderIdentity).toBe(lease.spec.holderIdentity);
    expect(second.exitCode).toBeNull();
    second.kill('SIGTERM');
  });

  it('a new CA, after the Secret is lost, fails none of the creates going on meanwhile', async () => {
    const state = clusterState();
    const oldCa = await secretField('ca.crt');
    await kubectl(['delete', 'secret', 'hookguard-tls', '-n', 'hookguard']);
    const commands: string[][] = [];
    const deadline = Date.now() + 150_000;
    let rotated = false;
    // Creates one after another until the replica serves a certificate of the new CA, and a few more after that.
    for (let after = 0; after < 5;) {
      commands.push((await createCleanupHook(ns, `during-rotation-${commands.length}`)).command);
      if (!rotated) {
        // The keeper writes the new CA before it signs a serving pair with it: tls.crt may still be empty.
        const [ca, crt] = await Promise.all([secretField('ca.crt'), secretField('tls.crt')]).catch(() => [oldCa, '']);
        rotated =
          ca !== oldCa &&
          crt !== '' &&
          (await servedCertificate(state.ports.hookguard!)) === new X509Certificate(crt).fingerprint256;
      } else after += 1;
      if (Date.now() > deadline) throw new Error(`no rotation within 150 s (${commands.length} creates)`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(commands.length).toBeGreaterThan(5);
    expect(commands.filter((command) => command.join(' ') !== MUTATED.join(' '))).toEqual([]);
  });

  it('a trust record naming none of the CAs in use ({"cas":[]}, as a GitOps tool re-applies it) drops no CA: no create fails', async () => {
    const state = clusterState();
    const kinds = ['mutatingwebhookconfiguration', 'validatingwebhookconfiguration'];
    const recordOf = (kind: string) =>
      kubectl([
        'get',
        kind,
        'hookguard',
        '-o',
        `jsonpath={.metadata.annotations.${TRUST_RECORD.replaceAll('.', '\\.')}}`,
      ]);
    const servedBefore = await servedCertificate(state.ports.hookguard!);
    const stale = '{"cas":[]}';
    for (const kind of kinds) await kubectl(['annotate', '--overwrite', kind, 'hookguard', `${TRUST_RECORD}=${stale}`]);
    // Creates one after another until the keeper has written a record of its own on both (a round follows a change
    // of either configuration), and a few more.
    const commands: string[][] = [];
    const deadline = Date.now() + 120_000;
    for (let after = 0; after < 5;) {
      commands.push((await createCleanupHook(ns, `stale-record-${commands.length}`)).command);
      if (!(await Promise.all(kinds.map(recordOf))).includes(stale)) after += 1;
      if (Date.now() > deadline) throw new Error(`the keeper never rewrote the record (${commands.length} creates)`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    expect(commands.filter((command) => command.join(' ') !== MUTATED.join(' '))).toEqual([]);
    // The same pair is served, the Secret's, signed by the CA every caBundle still holds.
    expect(await servedCertificate(state.ports.hookguard!)).toBe(servedBefore);
    expect(await secretCertificate()).toBe(servedBefore);
    const secretCa = new X509Certificate(await secretField('ca.crt')).fingerprint256;
    for (const kind of kinds) {
      const cas = bundleCertificates(await caBundleOf(kind));
      expect(cas.map((ca) => ca.fingerprint256)).toContain(secretCa);
    }
  });

  it('a hung hookguard costs a create at most timeoutSeconds, and the hook goes through as written (failurePolicy Ignore)', async () => {
    const state = clusterState();
    const pid = state.pids.hookguard!;
    const timeout = Number(
      await kubectl([
        'get',
        'mutatingwebhookconfiguration',
        'hookguard',
        '-o',
        'jsonpath={.webhooks[0].timeoutSeconds}',
      ]),
    );
    expect(timeout).toBe(5);
    process.kill(pid, 'SIGSTOP');
    try {
      const hung = await createCleanupHook(ns, 'while-hung');
      expect(hung.command).toEqual(AS_WRITTEN);
      // Both webhooks wait out their timeout once each; never more.
      expect(hung.millis).toBeLessThan(2 * timeout * 1000 + 5000);
    } finally {
      process.kill(pid, 'SIGCONT');
    }
    await waitUntil('hookguard to mutate again', async () =>
      (await createCleanupHook(ns, `after-${Date.now()}`)).command.includes('--ignore-not-found'),
    );
  });
});
