// `hookguard sweep` as a user runs it: the built CLI in a real process, a kubeconfig file, and a stand-in for
// kube-apiserver (test/support/fake-apiserver.ts) on 127.0.0.1.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import { runCliAsync } from '../support/cli.js';
import { freePort } from '../support/serve-process.js';
import { FakeApiServer, serviceAccountToken } from '../support/fake-apiserver.js';
import { HOOK_FINALIZER } from '../support/objects.js';
import { KEEP, seed } from '../support/stuck-hooks.js';

const dir = mkdtempSync(join(tmpdir(), 'hookguard-sweep-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
const ACTOR = 'system:serviceaccount:hookguard:hookguard-sweep';
// Quick retries, so the failure cases end fast.
const CONFIG = join(dir, 'config.yaml');
writeFileSync(CONFIG, 'sweep:\n  maxAttempts: 2\n  backoffInitialMs: 10\n  backoffMaxMs: 20\n');

let server: FakeApiServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

async function cluster(): Promise<{ server: FakeApiServer; env: Record<string, string> }> {
  server = await new FakeApiServer().start();
  seed(server);
  const path = join(dir, `kubeconfig-${server.port}`);
  writeFileSync(path, server.kubeConfig('hookguard-sweep', serviceAccountToken(ACTOR)).exportConfig());
  return { server, env: { KUBECONFIG: path } };
}

/** Ages change from run to run; everything else is compared exactly. */
const steady = (text: string) => text.replace(/deleting for [0-9hms]+/g, 'deleting for AGE');
describe('hookguard sweep (the built CLI)', () => {
  it('dry run by default: lists what qualifies and why, changes nothing, exits 0', async () => {
    const { server, env } = await cluster();
    const run = await runCliAsync(['sweep'], env);
    expect(run.status).toBe(0);
    expect(steady(run.stdout)).toBe(
      [
        `Job apps/keeps-other: would remove argocd.argoproj.io/hook-finalizer (Argo CD PreSync hook; Job Complete; deleting for AGE, at least 5m0s); finalizers [${KEEP}, ${HOOK_FINALIZER}] -> [${KEEP}]`,
        `Job apps/failed-only-hook: would remove argocd.argoproj.io/hook-finalizer (Argo CD PreSync hook; Job Failed; deleting for AGE, at least 5m0s); finalizers [${HOOK_FINALIZER}] -> []`,
        `Job apps/running-old: would remove argocd.argoproj.io/hook-finalizer (Argo CD PreSync hook; not finished; deleting for AGE, at least 10m0s); finalizers [${HOOK_FINALIZER}] -> []`,
        'Job apps/running-new: left alone (still running and deleting for AGE, under 10m0s: Argo CD may still remove it)',
        'Job apps/not-a-hook: left alone (not a hook: no Argo CD or Helm hook annotation)',
        `Pod team-b/pod-done: would remove argocd.argoproj.io/hook-finalizer (Argo CD PreSync hook; Pod Succeeded; deleting for AGE, at least 5m0s); finalizers [${HOOK_FINALIZER}] -> []`,
        'dry run over all namespaces: 4 would be changed, 2 left alone; run with --apply to remove the finalizers',
        '',
      ].join('\n'),
    );
    expect(server.requests.filter((request) => request.method !== 'GET')).toEqual([]);
  });

  it('--apply --output json removes the finalizers, prints the report and writes one audit line per removal', async () => {
    const { server, env } = await cluster();
    const run = await runCliAsync(['sweep', '--apply', '--output', 'json', '--namespace', 'apps'], env);
    expect(run.status).toBe(0);
    const report = JSON.parse(run.stdout) as {
      dryRun: boolean;
      actor: string;
      namespace: string;
      results: Array<{ name: string; action: string; finalizersAfter: string[] }>;
    };
    expect(report).toMatchObject({ dryRun: false, actor: ACTOR, namespace: 'apps' });
    expect(report.results.map((result) => [result.name, result.action, result.finalizersAfter])).toEqual([
      ['keeps-other', 'removed', [KEEP]],
      ['failed-only-hook', 'removed', []],
      ['running-old', 'removed', []],
      ['running-new', 'skipped', [HOOK_FINALIZER]],
      ['not-a-hook', 'skipped', [HOOK_FINALIZER]],
    ]);
    expect(server.get('Job', 'apps', 'keeps-other')?.metadata.finalizers).toEqual([KEEP]);
    expect(server.get('Pod', 'team-b', 'pod-done')?.metadata.finalizers).toEqual([HOOK_FINALIZER]);
    const audits = run.stderr
      .split('\n')
      .filter(Boolean)
      .map((line) => JSON.parse(line) as { audit?: Record<string, unknown> })
      .filter((line) => line.audit);
    expect(
      audits.map((line) => [
        line.audit?.name,
        line.audit?.actor,
        line.audit?.finalizersBefore,
        line.audit?.finalizersAfter,
      ]),
    ).toEqual([
      ['keeps-other', ACTOR, [KEEP, HOOK_FINALIZER], [KEEP]],
      ['failed-only-hook', ACTOR, [HOOK_FINALIZER], []],
      ['running-old', ACTOR, [HOOK_FINALIZER], []],
    ]);
  });

  it('exits 1 and says why when a patch fails, after doing the rest', async () => {
    const { server, env } = await cluster();
    server.fail({ method: 'PATCH', pathIncludes: '/running-old', status: 500, times: 5 });
    const run = await runCliAsync(['sweep', '--apply', '--namespace', 'apps', '--config', CONFIG], env);
    expect(run.status).toBe(1);
    expect(steady(run.stdout).split('\n')).toEqual(
      expect.arrayContaining([
        'Job apps/running-old: FAILED to remove argocd.argoproj.io/hook-finalizer (Argo CD PreSync hook; not finished; deleting for AGE, at least 10m0s; patch failed: HTTP 500: injected failure 500)',
        'applied over namespace apps as system:serviceaccount:hookguard:hookguard-sweep: 2 removed, 0 already gone, 2 left alone, 1 failed',
      ]),
    );
    expect(run.stderr).toContain('"msg":"could not remove argocd.argoproj.io/hook-finalizer"');
  });

  it('exits 1 when the cluster cannot be listed, and 2 with no cluster at all or a bad flag', async () => {
    const port = await freePort();
    const path = join(dir, 'kubeconfig-down');
    const down = new FakeApiServer();
    down.port = port;
    writeFileSync(path, down.kubeConfig().exportConfig());
    const unreachable = await runCliAsync(['sweep', '--config', CONFIG], { KUBECONFIG: path });
    expect(unreachable.status).toBe(1);
    expect(unreachable.stderr).toMatch(
      new RegExp(`hookguard sweep: cannot list hook Jobs and Pods \\(kubeconfig ${path}\\): .*ECONNREFUSED`),
    );

    const nowhere = await runCliAsync(['sweep'], { HOME: dir });
    expect([nowhere.status, nowhere.stdout, nowhere.stderr]).toEqual([
      2,
      '',
      'hookguard sweep: no cluster to sweep: set KUBECONFIG, or run in a pod with a service account\n',
    ]);
    const badOutput = await runCliAsync(['sweep', '--output', 'yaml'], { HOME: dir });
    expect([badOutput.status, badOutput.stderr]).toEqual([
      2,
      'hookguard sweep: --output must be text or json, got "yaml"\n',
    ]);
  });
});
