// serve's policy-params controller (issue 38.2): the ConfigMap hookguard-policy-params follows what Argo CD discovery
// knows, written by server-side apply only when it changes, and not before discovery's first list.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config/load.js';
import type { ArgoInstance, ArgoInstances } from '../../../src/core/argocd-instances.js';
import type { KubeObject } from '../../../src/core/types.js';
import type { ArgoVersionSource, DiscoveryStatus } from '../../../src/discovery/discovery.js';
import {
  argocdVersions,
  currentPolicyParams,
  policyParamsTask,
  type PolicyParamsClient,
} from '../../../src/controllers/policy-params.js';
import { decisionContext } from '../../../src/config/decision-context.js';
import { policyParams } from '../../../src/policies/generate.js';
import { capturedLogger, eventually } from '../../support/log-sink.js';

const instance = (namespace: string, version: string | undefined): ArgoInstance => ({
  namespace,
  version,
  source: 'test',
  controllerUsernames: [`system:serviceaccount:${namespace}:argocd-application-controller`],
});
const instances = (...list: ArgoInstance[]): ArgoInstances => new Map(list.map((each) => [each.namespace, each]));

/** A discovery source whose snapshot the test changes. */
function source(initial: ArgoInstances, synced = true) {
  let current = initial;
  let isSynced = synced;
  const view: ArgoVersionSource = {
    instances: () => current,
    status: (): DiscoveryStatus => ({ enabled: true, synced: isSynced, watching: true, instances: [] }),
  };
  return {
    view,
    set(next: ArgoInstances) {
      current = next;
    },
    sync() {
      isSynced = true;
    },
  };
}

// The default argocd.remote (argocd-manager, version unknown) would keep the floor on whatever is found: here the
// remote Argo CD is a fixed one.
const REMOTE = 'system:serviceaccount:kube-system:argocd-manager';
const dir = mkdtempSync(join(tmpdir(), 'hookguard-policy-params-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));
let files = 0;
/** The config with argocd.remote from a file (a mapping has no text form for overrides), and scalar overrides. */
function config(
  overrides: Record<string, unknown> = {},
  remote: Record<string, string | null> = { [REMOTE]: '3.5.1' },
) {
  const file = join(dir, `config-${files++}.json`);
  writeFileSync(file, JSON.stringify({ argocd: { remote } }));
  return loadConfig({ file, overrides: { 'policyParams.recheckSeconds': 1, ...overrides } });
}

describe('the policy parameters from discovery', () => {
  it('judge each Argo CD version found: the floor on sync hooks while any of them is affected or unknown', () => {
    const floor = (found: ArgoInstances, overrides = {}, remote?: Record<string, string | null>) =>
      currentPolicyParams(config(overrides, remote), found).data;
    expect(floor(instances(instance('argocd', '3.5.1')))).toEqual({
      argocdVersion: '3.5.1',
      ttlFloorOnArgoSyncHooks: 'false',
    });
    expect(floor(instances(instance('argocd', '3.5.1'), instance('team-a', '2.14.3')))).toEqual({
      argocdVersion: '2.14.3,3.5.1',
      ttlFloorOnArgoSyncHooks: 'true',
    });
    expect(floor(instances(instance('argocd', '3.5.1'), instance('team-a', undefined)))).toEqual({
      argocdVersion: '3.5.1,unknown',
      ttlFloorOnArgoSyncHooks: 'true',
    });
    expect(floor(instances(), {}, { [REMOTE]: null })).toEqual({
      argocdVersion: '',
      ttlFloorOnArgoSyncHooks: 'true',
    });
    // A remote Argo CD counts; a pinned version covers every instance, as it does for the webhook.
    expect(floor(instances(instance('argocd', '3.5.1')), {}, { [REMOTE]: '2.14.3' })).toEqual({
      argocdVersion: '2.14.3,3.5.1',
      ttlFloorOnArgoSyncHooks: 'true',
    });
    expect(floor(instances(instance('team-a', '2.14.3')), { 'argocd.version': '3.5.1' })).toEqual({
      argocdVersion: '3.5.1',
      ttlFloorOnArgoSyncHooks: 'false',
    });
  });

  it('are what `hookguard policies --argocd-version V` prints for one version found', () => {
    const settings = config({ 'policyParams.namespace': 'platform' });
    const pinned = (version: string) =>
      policyParams(decisionContext(config({ 'argocd.version': version })), { namespace: 'platform' });
    expect(currentPolicyParams(settings, instances(instance('argocd', '3.5.1')))).toEqual(pinned('3.5.1'));
    expect(currentPolicyParams(settings, instances(instance('argocd', '2.14.3')))).toEqual({
      ...pinned('2.14.3'),
      data: { ...(pinned('2.14.3').data as Record<string, string>), argocdVersion: '2.14.3,3.5.1' },
    });
    expect(argocdVersions(settings, instances(instance('argocd', undefined)))).toEqual([undefined, '3.5.1']);
  });
});

describe('the policy-params task', () => {
  it('writes after discovery has listed, again only when the parameters change, and retries a failed write', async () => {
    const applied: KubeObject[] = [];
    let fail = 1;
    const client: PolicyParamsClient = {
      apply: async (configMap) => {
        if (fail-- > 0) throw new Error('the API server is away');
        applied.push(configMap);
      },
    };
    const discovery = source(instances(instance('argocd', '3.5.1')), false);
    const { logger, lines } = capturedLogger();
    const controller = new AbortController();
    const settings = config({ 'policyParams.namespace': 'platform' });
    const running = policyParamsTask(settings, client, () => discovery.view, logger).run(controller.signal);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect([applied.length, fail]).toEqual([0, 1]);
    discovery.sync();
    await eventually(() => applied.length === 1, 'the first write, after one failure', 5000);
    expect(lines.some((line) => line.msg.startsWith('admission policy parameters not written'))).toBe(true);
    expect(applied[0]!.metadata).toMatchObject({ name: 'hookguard-policy-params', namespace: 'platform' });
    expect(applied[0]!.data).toEqual({ argocdVersion: '3.5.1', ttlFloorOnArgoSyncHooks: 'false' });
    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect(applied).toHaveLength(1);
    discovery.set(instances(instance('argocd', '2.14.3')));
    await eventually(() => applied.length === 2, 'the write after an Argo CD downgrade', 5000);
    expect(applied[1]!.data).toEqual({ argocdVersion: '2.14.3,3.5.1', ttlFloorOnArgoSyncHooks: 'true' });
    controller.abort();
    await running;
  }, 15_000);
});
