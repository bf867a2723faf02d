// Two real `hookguard serve` processes (the built CLI) sharing a stand-in for kube-apiserver
// (test/support/fake-apiserver.ts), which calls their webhooks over TLS for the self-test's dry runs as the API
// server would through the Service: one leads and self-tests, the other takes over when it goes, and a stale
// caBundle, on either webhook configuration alone, shows as WebhookCalled=False within one interval.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { generateDevCertificate } from '../../src/tls/certificates.js';
import { FakeApiServer, serviceAccountToken, type KubeItem } from '../support/fake-apiserver.js';
import { CHART_CRD, HOOKGUARD_OBJECT } from '../support/manifests.js';
import { eventually } from '../support/log-sink.js';
import { ServeProcess } from '../support/serve-process.js';
import { tlsEnv, writeCertificate } from '../support/server-process.js';

const dir = mkdtempSync(join(tmpdir(), 'hookguard-serve-self-test-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const HOOKGUARD_SA = 'system:serviceaccount:hookguard:hookguard';
const INTERVAL_SECONDS = 1;
const LEASE_DURATION_SECONDS = 2;
// The HookGuard kind and object as the chart ships them.
const chartCrd = () => parse(readFileSync(CHART_CRD, 'utf8')) as KubeItem;
const hookGuardObject = () => structuredClone(HOOKGUARD_OBJECT) as unknown as KubeItem;

type Status = { leader?: string; conditions?: Array<Record<string, unknown>> } | undefined;

async function cluster() {
  const fake = await new FakeApiServer().start();
  fake.defineCustomResource(chartCrd());
  fake.put(hookGuardObject());
  const tls = await generateDevCertificate();
  const files = writeCertificate(tls);
  const kubeconfig = join(dir, `kubeconfig-${fake.port}`);
  writeFileSync(kubeconfig, fake.kubeConfig('hookguard', serviceAccountToken(HOOKGUARD_SA)).exportConfig());
  const config = join(dir, `config-${fake.port}.yaml`);
  writeFileSync(
    config,
    stringify({
      argocd: { version: '3.0.1' },
      server: { shutdownDelayMs: 0 },
      selfTest: { intervalSeconds: INTERVAL_SECONDS, requestTimeoutMs: 2000 },
      leaderElection: { leaseDurationSeconds: LEASE_DURATION_SECONDS, renewDeadlineMs: 1500, retryPeriodMs: 200 },
    }),
  );
  const replicas: ServeProcess[] = [];
  const start = async () => {
    const replica = await ServeProcess.start(['--config', config], { KUBECONFIG: kubeconfig, ...tlsEnv(files) });
    replicas.push(replica);
    endpoints.add(replica);
    return replica;
  };
  const kill = (replica: ServeProcess, signal: NodeJS.Signals) => {
    endpoints.delete(replica);
    replica.child.kill(signal);
  };
  // The Service: the API server reaches any replica in its endpoints; one being stopped leaves them first.
  const endpoints = new Set<ServeProcess>();
  // Each webhook configuration's caBundle.
  const caBundles = { 'mutate.hookguard.io': tls.cert, 'validate.hookguard.io': tls.cert };
  fake.admission = {
    endpoint: (webhook) => {
      const ready = [...endpoints];
      const replica = ready[Math.floor(Math.random() * ready.length)] ?? replicas[0]!;
      return { url: `https://127.0.0.1:${replica.port}`, caBundle: caBundles[webhook] };
    },
  };
  const status = () => (fake.get('HookGuard', '', 'hookguard') as KubeItem).status as Status;
  const condition = (type: string) => status()?.conditions?.find((each) => each.type === type);
  return {
    fake,
    start,
    kill,
    status,
    condition,
    staleCaBundle: async (webhook: keyof typeof caBundles) =>
      (caBundles[webhook] = (await generateDevCertificate()).cert),
    stop: async () => {
      for (const replica of replicas) replica.stop();
      files.remove();
      await fake.stop();
    },
  };
}

const leading = (replica: ServeProcess) => replica.lines.some((line) => line.msg === 'leading: acquired the Lease');
const identityOf = (replica: ServeProcess) =>
  replica.lines.find((line) => line.msg === 'leading: acquired the Lease')?.identity as string | undefined;
const selfTests = (replica: ServeProcess) => replica.lines.filter((line) => line.msg === 'self-test').length;

describe('hookguard serve: the self-test with two replicas (the built CLI)', () => {
  it('one replica leads and writes the status; on SIGTERM it hands over at once, and on SIGKILL after the lease duration', async () => {
    const world = await cluster();
    try {
      const a = await world.start();
      await eventually(() => leading(a), 'a leads', 10_000);
      const b = await world.start();
      await eventually(() => world.condition('Ready')?.status === 'True', 'Ready True', 10_000);
      expect(world.status()?.leader).toBe(identityOf(a));
      expect(await b.waitForLog((line) => line.msg === 'another replica leads')).toMatchObject({
        leader: identityOf(a),
      });
      // Only the leader probes: b has logged no self-test after a few intervals (debug lines are off; the status
      // and the stand-in's dry runs say who did).
      await new Promise((resolve) => setTimeout(resolve, 2 * INTERVAL_SECONDS * 1000));
      expect(leading(b)).toBe(false);
      const dryRuns = world.fake.requests.filter(
        (request) => request.method === 'POST' && request.query.dryRun === 'All',
      );
      expect(dryRuns.length).toBeGreaterThanOrEqual(2);

      // SIGTERM: a releases the Lease while it drains; b takes over at its next try.
      const signalled = performance.now();
      world.kill(a, 'SIGTERM');
      await eventually(() => leading(b), 'b leads', 5000);
      expect(performance.now() - signalled).toBeLessThan(LEASE_DURATION_SECONDS * 1000);
      expect(await a.exitWithin(5000)).toBe(0);
      expect(a.lines.map((line) => line.msg)).toContain('released the Lease');
      await eventually(() => world.status()?.leader === identityOf(b), 'b writes the status', 5000);
      expect(world.condition('Ready')?.status).toBe('True');

      // SIGKILL: no release; c waits until b's record has not changed for the lease duration.
      const c = await world.start();
      await eventually(() => c.lines.some((line) => line.msg === 'another replica leads'), 'c sees b', 5000);
      const killed = performance.now();
      world.kill(b, 'SIGKILL');
      await eventually(() => leading(c), 'c leads', 10_000);
      const takeover = performance.now() - killed;
      expect(takeover).toBeGreaterThan(LEASE_DURATION_SECONDS * 1000 - 500);
      await eventually(() => world.status()?.leader === identityOf(c), 'c writes the status', 5000);
      expect(selfTests(c)).toBe(0); // Called outcomes log at debug: nothing went wrong
      world.kill(c, 'SIGTERM');
      expect(await c.exitWithin(5000)).toBe(0);
    } finally {
      await world.stop();
    }
  }, 60_000);

  it(`a stale caBundle shows as WebhookCalled=False within one interval (${INTERVAL_SECONDS} s here), on either webhook alone`, async () => {
    const world = await cluster();
    try {
      const a = await world.start();
      await eventually(() => world.condition('WebhookCalled')?.status === 'True', 'WebhookCalled True', 10_000);
      const calledSince = world.condition('WebhookCalled')?.lastTransitionTime;
      // The ValidatingWebhookConfiguration's alone: the mutating webhook still patches the probe, denials stop.
      const broken = performance.now();
      await world.staleCaBundle('validate.hookguard.io');
      await eventually(() => world.condition('WebhookCalled')?.status === 'False', 'WebhookCalled False', 10_000);
      const flippedAfterMs = performance.now() - broken;
      console.log(
        `stale validating caBundle -> WebhookCalled=False after ${Math.round(flippedAfterMs)} ms (interval ${INTERVAL_SECONDS} s)`,
      );
      expect(flippedAfterMs).toBeLessThan(INTERVAL_SECONDS * 1000 + 1500);
      expect(world.condition('WebhookCalled')).toMatchObject({ reason: 'ValidatingNotCalled' });
      expect(world.condition('WebhookCalled')?.lastTransitionTime).not.toBe(calledSince);
      expect(world.condition('Ready')).toMatchObject({ status: 'False', reason: 'ValidatingNotCalled' });
      const warned = await a.waitForLog((line) => line.msg === 'HookGuard condition WebhookCalled is now False');
      expect(warned).toMatchObject({ level: 40, from: 'True', to: 'False', reason: 'ValidatingNotCalled' });
      // Then the MutatingWebhookConfiguration's too: neither is called.
      await world.staleCaBundle('mutate.hookguard.io');
      await eventually(() => world.condition('WebhookCalled')?.reason === 'NotCalled', 'reason NotCalled', 10_000);
      expect(world.condition('Ready')).toMatchObject({ status: 'False', reason: 'NotCalled' });
      expect(
        a.lines.some((line) => line.msg === 'self-test' && line.outcome === 'NotCalled' && line.level === 40),
      ).toBe(true);
      world.kill(a, 'SIGTERM');
      expect(await a.exitWithin(5000)).toBe(0);
    } finally {
      await world.stop();
    }
  }, 30_000);
});
