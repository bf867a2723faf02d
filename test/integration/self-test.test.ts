// The self-test against a stand-in for kube-apiserver (test/support/fake-apiserver.ts): its dry-run CREATE calls
// the real /mutate and /validate of buildApp over TLS, trusting only the configured caBundle, applies the patch,
// fails open when the call fails (failurePolicy Ignore), and returns warnings as Warning headers; the HookGuard
// object is served from the shipped CRD, validated against its schema, with a status subresource.
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { loadConfig } from '../../src/config/load.js';
import { advisoriesOfTool } from '../../src/core/argocd-version.js';
import type { Mode } from '../../src/core/types.js';
import type { DiscoveryStatus } from '../../src/discovery/discovery.js';
import { buildApp } from '../../src/http/app.js';
import { Metrics } from '../../src/http/metrics.js';
import { HOOKGUARD_RESOURCE, kubeSelfTestClient } from '../../src/controllers/selftest/client.js';
import { VALIDATING_MARKER } from '../../src/controllers/selftest/probe.js';
import { SelfTest } from '../../src/controllers/selftest/self-test.js';
import { generateDevCertificate, type TlsMaterial } from '../../src/tls/certificates.js';
import { FakeApiServer, serviceAccountToken, type KubeItem } from '../support/fake-apiserver.js';
import { CHART_CRD, HOOKGUARD_OBJECT } from '../support/manifests.js';
import { capturedLogger, type LogLine } from '../support/log-sink.js';

const HOOKGUARD_SA = 'system:serviceaccount:hookguard:hookguard';
// The HookGuard kind and object as the chart ships them.
const chartCrd = () => parse(readFileSync(CHART_CRD, 'utf8')) as KubeItem;
const hookGuardObject = () => structuredClone(HOOKGUARD_OBJECT) as unknown as KubeItem;
const NO_ARGOCD: DiscoveryStatus = { enabled: true, synced: true, watching: true, instances: [] };

let cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

interface World {
  fake: FakeApiServer;
  webhook: { app: FastifyInstance; url: string; tls: TlsMaterial; metrics: Metrics; lines: LogLine[] };
  test: SelfTest;
  lines: LogLine[];
  outcomes: string[];
  object(): KubeItem;
  condition(type: string): Record<string, unknown> | undefined;
}

/** hookguard's webhooks over TLS, the stand-in API server calling them, and a self-test (as hookguard's account). */
async function world(
  mode: Mode,
  options: { certificateWarningDays?: number; pinned?: string | null } = {},
): Promise<World> {
  const tls = await generateDevCertificate();
  const config = loadConfig({ overrides: { mode } });
  const hookLogs = capturedLogger('debug');
  const metrics = new Metrics();
  const app = buildApp(config, {
    logger: hookLogs.logger,
    tls,
    metrics,
    selfTest: { status: () => ({ enabled: false, reason: 'test' }), probeUsername: HOOKGUARD_SA },
  });
  await app.listen({ host: '127.0.0.1', port: 0 });
  cleanup.push(() => app.close());
  const url = `https://127.0.0.1:${(app.server.address() as AddressInfo).port}`;

  const fake = await new FakeApiServer().start();
  cleanup.push(() => fake.stop());
  fake.defineCustomResource(chartCrd());
  fake.put(hookGuardObject());
  fake.admission = { endpoint: () => ({ url, caBundle: tls.cert }) };

  const { logger, lines } = capturedLogger('debug');
  const outcomes: string[] = [];
  const test = new SelfTest(
    kubeSelfTestClient(fake.kubeConfig('hookguard', serviceAccountToken(HOOKGUARD_SA))),
    {
      mode,
      namespace: 'hookguard-selftest',
      intervalSeconds: 1,
      requestTimeoutMs: 5000,
      certificateWarningDays: options.certificateWarningDays ?? 14,
      pinnedArgocdVersion: options.pinned === undefined ? '3.0.1' : options.pinned,
      // What src/controllers/selftest/start.ts hands it: the Argo CD advisories only.
      advisories: advisoriesOfTool(config.advisories, 'argocd'),
    },
    { certificate: () => tls.cert, discovery: () => NO_ARGOCD },
    (outcome) => outcomes.push(outcome),
    logger,
    'replica-a',
  );
  const object = () => fake.get('HookGuard', '', 'hookguard') as KubeItem;
  return {
    fake,
    webhook: { app, url, tls, metrics, lines: hookLogs.lines },
    test,
    lines,
    outcomes,
    object,
    condition: (type) =>
      ((object().status as { conditions?: Array<Record<string, unknown>> } | undefined)?.conditions ?? []).find(
        (condition) => condition.type === type,
      ),
  };
}

const never = new AbortController().signal;
const summary = (world: World) =>
  ((world.object().status as { conditions: Array<Record<string, unknown>> }).conditions ?? []).map((condition) => [
    condition.type,
    condition.status,
    condition.reason,
  ]);

describe('the self-test through the stand-in API server', () => {
  it('Called (enforce): the dry run came back with the patch; the status says so through the status subresource', async () => {
    const w = await world('enforce');
    await w.test.once(never);
    expect(w.outcomes).toEqual(['Called']);
    expect(w.fake.webhookCalls).toEqual([
      { webhook: 'mutate.hookguard.io', outcome: 'called' },
      { webhook: 'validate.hookguard.io', outcome: 'called' },
    ]);
    const dryRun = w.fake.requests.find((request) => request.method === 'POST');
    expect([dryRun?.path, dryRun?.query, dryRun?.user, dryRun?.status]).toEqual([
      '/apis/batch/v1/namespaces/hookguard-selftest/jobs',
      { dryRun: 'All', fieldManager: 'hookguard' },
      HOOKGUARD_SA,
      201,
    ]);
    // Nothing was stored.
    expect(w.fake.requests.filter((request) => request.method === 'PUT').map((request) => request.path)).toEqual([
      '/apis/hookguard.io/v1alpha1/hookguards/hookguard/status',
    ]);
    const status = w.object().status as Record<string, any>;
    expect(summary(w)).toEqual([
      ['WebhookCalled', 'True', 'Called'],
      ['CertificateValid', 'True', 'Valid'],
      ['ArgoCDKnown', 'True', 'Pinned'],
      ['Ready', 'True', 'Ready'],
    ]);
    expect(status).toMatchObject({
      observedGeneration: 1,
      mode: 'enforce',
      leader: 'replica-a',
      lastSelfTest: { outcome: 'Called' },
      advisoriesInEffect: [
        'argocd-fast-hook-finalizer-race',
        'argocd-native-sidecar-finalizer-update',
        'argocd-foreign-finalizer',
      ].map((id) => ({ id, instances: [{ namespace: '', version: '3.0.1' }] })),
    });
    expect(status.certificateNotAfter).toBe(
      new Date(new X509Certificate(w.webhook.tls.cert).validTo).toISOString().replace(/\.\d{3}Z$/, 'Z'),
    );
    expect(w.condition('WebhookCalled')?.message).toBe(
      `the API server called both webhooks: the dry-run probe came back with hookguard's patch (--ignore-not-found) and the warning "${VALIDATING_MARKER}"`,
    );
  });

  it('keeps the probe out of the admission metrics and the audit log: a debug line instead', async () => {
    const w = await world('enforce');
    await w.test.once(never);
    const exposition = (await w.webhook.metrics.exposition()).text;
    expect(exposition).toMatch(/hookguard_admission_requests_total\{endpoint="mutate",decision="patched"\} 0/);
    expect(exposition).toMatch(/hookguard_admission_requests_total\{endpoint="validate",decision="allowed"\} 0/);
    expect(w.webhook.lines.filter((line) => line.msg === 'admission decision')).toEqual([]);
    const probeLines = w.webhook.lines.filter((line) => line.msg === 'self-test probe decided');
    expect(
      probeLines.map((line) => {
        const decided = line.selfTest as Record<string, unknown>;
        return [line.level, decided.endpoint, decided.dryRun, decided.user];
      }),
    ).toEqual([
      [20, 'mutate', true, HOOKGUARD_SA],
      [20, 'validate', true, HOOKGUARD_SA],
    ]);
  });

  it('Called (audit): no patch, so the answer is read for the warning the API server returned as a header', async () => {
    const w = await world('audit');
    await w.test.once(never);
    expect(w.outcomes).toEqual(['Called']);
    expect(w.condition('WebhookCalled')).toMatchObject({
      status: 'True',
      reason: 'Called',
      message: `the API server called both webhooks: the dry-run probe came back with hookguard's audit warning (hookguard audit would change [idempotent-cleanup]: …) and the warning "${VALIDATING_MARKER}"`,
    });
    expect((w.object().status as Record<string, unknown>).mode).toBe('audit');
  });

  it.each(['enforce', 'audit'] as const)(
    'NotCalled (%s): with a stale caBundle the API server fails open, the probe comes back unchanged, Ready turns False',
    async (mode) => {
      const w = await world(mode);
      const other = await generateDevCertificate();
      w.fake.admission = { endpoint: () => ({ url: w.webhook.url, caBundle: other.cert }) };
      await w.test.once(never);
      expect(w.outcomes).toEqual(['NotCalled']);
      expect(w.fake.webhookCalls.map((call) => [call.webhook, call.outcome])).toEqual([
        ['mutate.hookguard.io', 'failed open'],
        ['validate.hookguard.io', 'failed open'],
      ]);
      expect(w.fake.webhookCalls[0]?.error).toMatch(/self-signed certificate|unable to verify/);
      expect(summary(w)).toEqual([
        ['WebhookCalled', 'False', 'NotCalled'],
        ['CertificateValid', 'True', 'Valid'],
        ['ArgoCDKnown', 'True', 'Pinned'],
        ['Ready', 'False', 'NotCalled'],
      ]);
      expect(w.lines.filter((line) => line.msg === 'self-test').map((line) => [line.level, line.outcome])).toEqual([
        [40, 'NotCalled'],
      ]);
    },
  );

  it.each([
    ['enforce', 'validate.hookguard.io', 'ValidatingNotCalled'],
    ['audit', 'validate.hookguard.io', 'ValidatingNotCalled'],
    ['enforce', 'mutate.hookguard.io', 'MutatingNotCalled'],
    ['audit', 'mutate.hookguard.io', 'MutatingNotCalled'],
  ] as const)(
    '%s: a stale caBundle on %s alone shows as WebhookCalled=False, reason %s',
    async (mode, stale, reason) => {
      const w = await world(mode);
      const other = await generateDevCertificate();
      w.fake.admission = {
        endpoint: (webhook) => ({ url: w.webhook.url, caBundle: webhook === stale ? other.cert : w.webhook.tls.cert }),
      };
      await w.test.once(never);
      expect(w.outcomes).toEqual(['NotCalled']);
      expect(w.fake.webhookCalls.map((call) => [call.webhook, call.outcome])).toEqual([
        ['mutate.hookguard.io', stale === 'mutate.hookguard.io' ? 'failed open' : 'called'],
        ['validate.hookguard.io', stale === 'validate.hookguard.io' ? 'failed open' : 'called'],
      ]);
      expect(summary(w)).toEqual([
        ['WebhookCalled', 'False', reason],
        ['CertificateValid', 'True', 'Valid'],
        ['ArgoCDKnown', 'True', 'Pinned'],
        ['Ready', 'False', reason],
      ]);
      expect(w.condition('WebhookCalled')?.message).toMatch(
        new RegExp(`the API server logs failed calling webhook "${stale.replaceAll('.', '\\.')}"$`),
      );
      expect((w.object().status as Record<string, any>).lastSelfTest).toMatchObject({ outcome: 'NotCalled' });
    },
  );

  it('Error: a failed dry run (here RBAC refuses it) says nothing about the webhook: WebhookCalled Unknown, with the reason', async () => {
    const w = await world('enforce');
    w.fake.fail({ method: 'POST', pathIncludes: '/jobs', status: 403 });
    await w.test.once(never);
    expect(w.outcomes).toEqual(['Error']);
    expect(w.condition('WebhookCalled')).toMatchObject({
      status: 'Unknown',
      reason: 'Error',
      message: 'the dry run of the probe Job in namespace hookguard-selftest failed (HTTP 403): injected failure 403',
    });
    expect(w.condition('Ready')).toMatchObject({ status: 'False', reason: 'Error' });
  });

  it('moves lastTransitionTime only on a transition, logs a warning for each, and tracks the generation', async () => {
    const w = await world('enforce');
    await w.test.once(never);
    const first = Object.fromEntries(
      summary(w).map(([type]) => [type, w.condition(type as string)?.lastTransitionTime]),
    );
    await new Promise((resolve) => setTimeout(resolve, 1100));
    await w.test.once(never);
    const second = Object.fromEntries(
      summary(w).map(([type]) => [type, w.condition(type as string)?.lastTransitionTime]),
    );
    expect(second).toEqual(first);

    w.fake.admission = { endpoint: () => ({ url: w.webhook.url, caBundle: '' }) };
    w.fake.put({ ...w.object(), spec: { note: 'edited' } });
    await w.test.once(never);
    const third = Object.fromEntries(
      summary(w).map(([type]) => [type, w.condition(type as string)?.lastTransitionTime]),
    );
    expect(third.CertificateValid).toBe(first.CertificateValid);
    expect(third.ArgoCDKnown).toBe(first.ArgoCDKnown);
    expect(third.WebhookCalled).not.toBe(first.WebhookCalled);
    expect(third.Ready).toBe(third.WebhookCalled);
    expect(w.object().metadata.generation).toBe(2);
    expect((w.object().status as Record<string, unknown>).observedGeneration).toBe(2);
    expect(w.condition('Ready')?.observedGeneration).toBe(2);

    const transitions = w.lines.filter((line) => String(line.msg).startsWith('HookGuard condition'));
    expect(transitions.map((line) => [line.level, line.condition, line.from, line.to])).toEqual([
      [40, 'WebhookCalled', null, 'True'],
      [40, 'CertificateValid', null, 'True'],
      [40, 'ArgoCDKnown', null, 'True'],
      [40, 'Ready', null, 'True'],
      [40, 'WebhookCalled', 'True', 'False'],
      [40, 'Ready', 'True', 'False'],
    ]);
  });

  it('CertificateValid turns False within certificateWarningDays, and so does Ready', async () => {
    const w = await world('enforce', { certificateWarningDays: 60 });
    await w.test.once(never);
    expect(w.condition('CertificateValid')).toMatchObject({ status: 'False', reason: 'ExpiresSoon' });
    expect(w.condition('Ready')).toMatchObject({ status: 'False', reason: 'ExpiresSoon' });
  });

  it('without the HookGuard object it still tests and logs, and says how the Helm chart brings it back', async () => {
    const w = await world('enforce');
    w.fake.remove('HookGuard', '', 'hookguard');
    await w.test.once(never);
    expect(w.outcomes).toEqual(['Called']);
    expect(w.lines.map((line) => line.msg)).toContain(
      'the HookGuard object "hookguard" does not exist or cannot be read: the Helm chart creates it (helm upgrade ' +
        'the release to recreate it); if its CRD hookguards.hookguard.io is missing too, first kubectl apply -f ' +
        'charts/hookguard/crds/ (Helm installs crds/ on first install only)',
    );
    expect(HOOKGUARD_RESOURCE.name).toBe('hookguard');
  });

  it('writes a status the shipped CRD schema accepts (the stand-in refuses anything else with 422)', async () => {
    const w = await world('enforce');
    await w.test.once(never);
    const put = w.fake.requests.find((request) => request.method === 'PUT');
    expect(put?.status).toBe(200);
    w.fake.requests.length = 0;
    // The stand-in does refuse what the schema does not allow.
    const broken = { ...w.object(), status: { mode: 'sometimes' } };
    const kube = w.fake.kubeConfig('hookguard', serviceAccountToken(HOOKGUARD_SA));
    await expect(kubeSelfTestClient(kube).writeStatus(broken, never)).rejects.toThrow(/422/);
  });
});
