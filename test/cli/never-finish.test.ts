// The rules for hooks that never finish (hook-deadline, hook-pod-restart-policy, mesh-sidecar, hook-sync-options) in
// real processes, over real chart manifests from test/fixtures: the built `hookguard serve` over TLS, its
// namespace watch reading a stand-in for kube-apiserver (test/support/fake-apiserver.ts) through a kubeconfig file;
// and the built `hookguard check` at render time.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parse, stringify } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { applyPatch } from '../../src/core/json-patch.js';
import type { KubeObject } from '../../src/core/types.js';
import type { AdmissionReviewResponse } from '../../src/http/responses.js';
import { runCli } from '../support/cli.js';
import { FakeApiServer } from '../support/fake-apiserver.js';
import { fixtureText } from '../support/fixtures.js';
import { assertValidKubeObject, stripNullFields } from '../support/k8s-schema.js';
import { eventually } from '../support/log-sink.js';
import { ARGOCD_CONTROLLER } from '../support/objects.js';
import { requestOnce } from '../support/request-once.js';
import { admissionReview, decodePatch } from '../support/reviews.js';
import { ServeProcess } from '../support/serve-process.js';

const dir = mkdtempSync(join(tmpdir(), 'hookguard-never-finish-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const fixture = (file: string): KubeObject => stripNullFields(parse(fixtureText(file))) as KubeObject;

/** The Argo CD e2e hook Pod as the API server hands it on when its manifest sets no restartPolicy: Always. */
function defaultedHookPod(): KubeObject {
  const pod = fixture('argo-cd-e2e-hook-sync-pod.yaml');
  (pod.spec as Record<string, unknown>).restartPolicy = 'Always';
  return pod;
}

/** argocd-example-apps' helm-hooks Job with the sync options of the argo-cd#24005 reproduction. */
function syncOptionsJob(): KubeObject {
  const job = fixture('argocd-example-apps-helm-hooks-upgrade-sql-schema.yaml');
  job.metadata!.annotations!['argocd.argoproj.io/sync-options'] = 'Force=true,Replace=true';
  return job;
}

async function post(port: number, path: string, body: unknown): Promise<AdmissionReviewResponse['response']> {
  const text = JSON.stringify(body);
  const reply = await requestOnce(
    {
      host: '127.0.0.1',
      port,
      method: 'POST',
      path,
      agent: false,
      rejectUnauthorized: false,
      headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) },
    },
    text,
  );
  expect(reply.status).toBe(200);
  return (JSON.parse(reply.body) as AdmissionReviewResponse).response;
}

// hook-deadline sets no deadline by default; it names the missing one.
const DEADLINE_MESSAGE = 'no spec.activeDeadlineSeconds: if its Pod never starts, this hook waits forever';
const DEADLINE_WARNING = `hookguard [hook-deadline]: ${DEADLINE_MESSAGE}`;
const DEADLINE_FINDING = { rule: 'hook-deadline', action: 'warn', message: DEADLINE_MESSAGE };

async function readyz(port: number): Promise<Record<string, unknown>> {
  const reply = await requestOnce({
    host: '127.0.0.1',
    port,
    path: '/readyz',
    agent: false,
    rejectUnauthorized: false,
  });
  return JSON.parse(reply.body) as Record<string, unknown>;
}

describe('hooks that never finish, in real processes over real charts', () => {
  it('hookguard serve over TLS: a deadline, Never for a defaulted Always, the namespace mesh, sync options', async () => {
    const server = await new FakeApiServer().start();
    server.put({
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: { name: 'ns', labels: { 'istio-injection': 'enabled' } },
    });
    const kubeconfig = join(dir, 'kubeconfig');
    writeFileSync(kubeconfig, server.kubeConfig('hookguard').exportConfig());
    const config = join(dir, 'config.yaml');
    writeFileSync(config, 'argocd:\n  version: 3.1.0\nserver:\n  shutdownDelayMs: 0\n');
    const serve = await ServeProcess.start(['--config', config], { KUBECONFIG: kubeconfig });
    try {
      expect(await serve.waitForLog((line) => line.msg === 'namespace watch on')).toMatchObject({
        from: `kubeconfig ${kubeconfig}`,
      });
      await eventually(
        async () => (await readyz(serve.port)).namespaces as { synced?: boolean } | undefined,
        'the namespace watch in /readyz',
      );
      await eventually(
        async () => ((await readyz(serve.port)).namespaces as { watching?: boolean }).watching,
        'the namespace watch watching',
      );
      expect((await readyz(serve.port)).namespaces).toEqual({
        enabled: true,
        synced: true,
        watching: true,
        namespacesWithRuleKeys: 1,
      });

      // ingress-nginx's admission-create hook, installed by Helm into a namespace Istio injects.
      const job = fixture('ingress-nginx-admission-create.yaml');
      const mutated = await post(
        serve.port,
        '/mutate',
        admissionReview({ uid: 'job', operation: 'CREATE', object: job }),
      );
      // Its TTL of 0 goes up to the floor (a Helm hook: helm#31786); its missing deadline is named, none is set.
      // With them the watcher's label and the log fallback of its one container.
      expect(decodePatch(mutated)).toEqual([
        {
          op: 'add',
          path: '/spec/template/spec/containers/0/terminationMessagePolicy',
          value: 'FallbackToLogsOnError',
        },
        { op: 'replace', path: '/spec/ttlSecondsAfterFinished', value: 60 },
        { op: 'add', path: '/metadata/labels/hookguard.io~1hook', value: 'admitted' },
      ]);
      expect(mutated.warnings).toEqual([
        DEADLINE_WARNING,
        'hookguard [mesh-sidecar]: istio-proxy may keep this Job running; pod label sidecar.istio.io/inject=false fixes it (name…',
      ]);

      // A bare Argo CD hook Pod the API server defaulted to Always: made Never, never denied.
      const pod = defaultedHookPod();
      const podReview = admissionReview({ uid: 'pod', operation: 'CREATE', object: pod, username: ARGOCD_CONTROLLER });
      const podAnswer = await post(serve.port, '/mutate', podReview);
      expect(podAnswer.allowed).toBe(true);
      expect(decodePatch(podAnswer)).toContainEqual({ op: 'replace', path: '/spec/restartPolicy', value: 'Never' });
      const stored = applyPatch(structuredClone(pod), decodePatch(podAnswer), true, false).newDocument;
      assertValidKubeObject(stored);
      const validated = await post(
        serve.port,
        '/validate',
        admissionReview({ uid: 'pod-v', operation: 'CREATE', object: stored, username: ARGOCD_CONTROLLER }),
      );
      expect(validated).toEqual({ uid: 'pod-v', allowed: true });

      // Sync options on a hook Argo CD applies: a warning, nothing changed by it.
      const options = await post(
        serve.port,
        '/mutate',
        admissionReview({ uid: 'opts', operation: 'CREATE', object: syncOptionsJob(), username: ARGOCD_CONTROLLER }),
      );
      expect(options.warnings).toEqual([
        DEADLINE_WARNING,
        'hookguard [hook-sync-options]: sync-options Replace=true,Force=true: Argo CD deletes and re-creates this hook (replace …',
      ]);

      serve.child.kill('SIGTERM');
      expect(await serve.exitWithin(5000)).toBe(0);
    } finally {
      serve.stop();
      await server.stop();
    }
  });

  it('hookguard check at render time: Never where none is set, a denial for an explicit Always, warnings', () => {
    const absent = fixture('kyverno-test-cleanup-controller-liveness.yaml');
    delete (absent.spec as Record<string, unknown>).restartPolicy;
    const fixed = runCli(['check', '-', '--fix'], stringify(absent));
    expect([fixed.status, fixed.stderr]).toEqual([0, '']);
    expect((parse(fixed.stdout) as KubeObject).spec?.restartPolicy).toBe('Never');

    const always = fixture('kyverno-test-cleanup-controller-liveness.yaml');
    (always.spec as Record<string, unknown>).restartPolicy = 'Always';
    const denied = runCli(['check', '-'], stringify(always));
    expect(denied.status).toBe(1);
    expect(denied.stdout).toContain(
      '  deny   hook-pod-restart-policy: Pod ns/rel-kyverno-cleanup-controller-liveness: restartPolicy Always keeps this hook from ever finishing',
    );

    const meshed = fixture('ingress-nginx-admission-create.yaml');
    (meshed.spec as { template: { metadata: Record<string, unknown> } }).template.metadata.labels = {
      'sidecar.istio.io/inject': 'true',
    };
    const report = runCli(
      ['check', '-', '--output', 'json'],
      `${stringify(syncOptionsJob())}---\n${stringify(meshed)}`,
    );
    expect(report.status).toBe(0);
    const results = (JSON.parse(report.stdout) as { results: { findings: { rule: string; action: string }[] }[] })
      .results;
    expect(results.map((result) => result.findings.filter((finding) => finding.action !== 'mutate'))).toEqual([
      [DEADLINE_FINDING, expect.objectContaining({ rule: 'hook-sync-options', action: 'warn' })],
      [
        DEADLINE_FINDING,
        {
          rule: 'mesh-sidecar',
          action: 'warn',
          message:
            'istio-proxy may keep this Job running; pod label sidecar.istio.io/inject=false fixes it (the pod template asks for it; a native sidecar would not: annotation sidecar.istio.io/nativeSidecar=true)',
        },
      ],
    ]);
  });
});
