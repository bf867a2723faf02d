// Helm 4.3.2 and 3.21.4, built from their modules, install, upgrade, roll back and uninstall a chart with a hook of
// every phase (test/cluster/chart) on the real control plane with hookguard in front of it: every command exits 0,
// every hook ran, the delete policies took effect; Helm 4 again through hookguard's post-renderer plugin. A failing
// hook fails Helm, the real Job controller says BackoffLimitExceeded, `hookguard why` names the container and exit
// code, and the hook watcher's Event is on the Job.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { cliPath } from '../support/cli.js';
import { repoRoot } from '../support/k8s-tools.js';
import {
  deleteNamespace,
  describeCluster,
  helm3Path,
  helm4Path,
  kubectl,
  kubectlJson,
  newNamespace,
  run,
  waitUntil,
  type Run,
} from './support/cluster.js';

const chart = join(repoRoot, 'test', 'cluster', 'chart');
const plugin = join(repoRoot, 'plugins', 'helm-hookguard');

type Json = Record<string, any>;

interface HelmCase {
  name: string;
  helm: string;
  postRenderer: boolean;
}

const CASES: HelmCase[] = [
  { name: 'Helm 4.3.2', helm: helm4Path, postRenderer: false },
  { name: 'Helm 4.3.2 with hookguard post-renderer', helm: helm4Path, postRenderer: true },
  { name: 'Helm 3.21.4', helm: helm3Path, postRenderer: false },
];

let helmHome = '';
const namespaces: string[] = [];

function helmEnv(): Record<string, string> {
  return {
    HELM_CACHE_HOME: join(helmHome, 'cache'),
    HELM_CONFIG_HOME: join(helmHome, 'config'),
    HELM_DATA_HOME: join(helmHome, 'data'),
    // The post-renderer runs the checkout's hookguard.
    HOOKGUARD_BIN: cliPath,
  };
}

function helm(which: HelmCase, args: string[]): Promise<Run> {
  const extra = which.postRenderer ? ['--post-renderer', 'hookguard'] : [];
  // rollback and uninstall render nothing: only install and upgrade take a post-renderer.
  const renders = args[0] === 'install' || args[0] === 'upgrade';
  return run(which.helm, [...args, ...(renders ? extra : []), '--timeout', '120s'], { env: helmEnv() });
}

async function job(ns: string, name: string): Promise<Json | undefined> {
  const got = await run(join(repoRoot, '.cluster', 'bin', 'kubectl'), ['get', 'job', name, '-n', ns, '-o', 'json']);
  return got.status === 0 ? (JSON.parse(got.stdout) as Json) : undefined;
}

async function expectSucceeded(ns: string, name: string): Promise<void> {
  const found = await job(ns, name);
  expect(found, `hook Job ${name}`).toBeDefined();
  expect(found?.status?.succeeded, `hook Job ${name} succeeded`).toBe(1);
}

describeCluster('Helm runs every hook of a chart on the real control plane', () => {
  beforeAll(async () => {
    helmHome = await mkdtemp(join(tmpdir(), 'hookguard-helm-'));
    const installed = await run(helm4Path, ['plugin', 'install', plugin], { env: helmEnv() });
    expect(installed.status, installed.stderr).toBe(0);
  });
  afterAll(async () => {
    for (const ns of namespaces) await deleteNamespace(ns);
    await rm(helmHome, { recursive: true, force: true });
  });

  it.concurrent.each(CASES)('$name: install, upgrade, rollback and uninstall', async (which) => {
    const ns = await newNamespace('helm');
    namespaces.push(ns);

    const install = await helm(which, ['install', 'rel', chart, '-n', ns]);
    expect(install.status, install.stderr).toBe(0);
    await expectSucceeded(ns, 'rel-pre-install');
    await expectSucceeded(ns, 'rel-post-install');
    const pod = await kubectlJson<Json>(['get', 'pod', 'rel-post-install-pod', '-n', ns]);
    expect(pod.status.phase).toBe('Succeeded');

    const upgrade = await helm(which, ['upgrade', 'rel', chart, '-n', ns, '--set', 'revision=2']);
    expect(upgrade.status, upgrade.stderr).toBe(0);
    // hook-succeeded: Helm deleted the pre-upgrade hook once it succeeded.
    expect(await job(ns, 'rel-pre-upgrade')).toBeUndefined();
    await expectSucceeded(ns, 'rel-post-upgrade');
    expect(await kubectl(['get', 'configmap', 'rel-settings', '-n', ns, '-o', 'jsonpath={.data.revision}'])).toBe('2');

    const rollback = await helm(which, ['rollback', 'rel', '1', '-n', ns]);
    expect(rollback.status, rollback.stderr).toBe(0);
    await expectSucceeded(ns, 'rel-pre-rollback');
    expect(await kubectl(['get', 'configmap', 'rel-settings', '-n', ns, '-o', 'jsonpath={.data.revision}'])).toBe('1');

    const uninstall = await helm(which, ['uninstall', 'rel', '-n', ns]);
    expect(uninstall.status, uninstall.stderr).toBe(0);
    await expectSucceeded(ns, 'rel-pre-delete');
    // hook-succeeded again: the post-delete hook ran and is gone, as is the release's ConfigMap.
    expect(await job(ns, 'rel-post-delete')).toBeUndefined();
    expect(
      (await run(join(repoRoot, '.cluster', 'bin', 'kubectl'), ['get', 'configmap', 'rel-settings', '-n', ns])).status,
    ).not.toBe(0);
  });

  it.concurrent('a failing hook: Helm fails, the Job controller gives up, why and the watcher say why', async () => {
    const ns = await newNamespace('helm-fail');
    namespaces.push(ns);
    const install = await helm(CASES[0]!, ['install', 'rel', chart, '-n', ns, '--set', 'failing=true']);
    expect(install.status).not.toBe(0);
    expect(install.stderr).toContain('post-install');

    const failed = await job(ns, 'rel-post-install');
    const condition = (failed?.status?.conditions as Json[] | undefined)?.find((c) => c.type === 'Failed');
    expect(condition).toMatchObject({
      status: 'True',
      reason: 'BackoffLimitExceeded',
      message: 'Job has reached the specified backoff limit',
    });

    const why = await run(process.execPath, [cliPath, 'why', 'job/rel-post-install', '-n', ns]);
    expect(why.status).toBe(1);
    expect(why.stdout).toMatch(/container post-install of Pod rel-post-install-\w+ exited with code 1 \(Error\)/);
    expect(why.stdout).toContain('BackoffLimitExceeded');

    const event = await waitUntil(
      'the hook watcher Event on the failed Job',
      async () => {
        const events = await kubectlJson<{ items: Json[] }>([
          'get',
          'events',
          '-n',
          ns,
          '--field-selector',
          'involvedObject.kind=Job,involvedObject.name=rel-post-install,reason=HookFailed',
        ]);
        return events.items[0];
      },
      90,
    );
    expect(event.type).toBe('Warning');
    expect(event.message).toMatch(/container post-install of Pod rel-post-install-\w+ exited with code 1 \(Error\)/);
  });
});
