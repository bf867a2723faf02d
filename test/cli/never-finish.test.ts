// The rules for hooks that never finish (hook-deadline, hook-pod-restart-policy, mesh-sidecar, hook-sync-options) at
// render time: the built `hookguard check` over real chart manifests from test/fixtures. The same rules through the
// real API server to `hookguard serve` are in test/cluster/never-finish.test.ts.
import { parse, stringify } from 'yaml';
import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../src/core/types.js';
import { runCli } from '../support/cli.js';
import { fixtureText } from '../support/fixtures.js';
import { stripNullFields } from '../support/k8s-schema.js';

const fixture = (file: string): KubeObject => stripNullFields(parse(fixtureText(file))) as KubeObject;

/** argocd-example-apps' helm-hooks Job with the sync options of the argo-cd#24005 reproduction. */
function syncOptionsJob(): KubeObject {
  const job = fixture('argocd-example-apps-helm-hooks-upgrade-sql-schema.yaml');
  job.metadata!.annotations!['argocd.argoproj.io/sync-options'] = 'Force=true,Replace=true';
  return job;
}

// hook-deadline sets no deadline by default; it names the missing one.
const DEADLINE_MESSAGE = 'no spec.activeDeadlineSeconds: if its Pod never starts, this hook waits forever';
const DEADLINE_FINDING = { rule: 'hook-deadline', action: 'warn', message: DEADLINE_MESSAGE };

describe('hooks that never finish, at render time over real charts', () => {
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
