// Leader election over a real coordination.k8s.io/v1 Lease (client-go's protocol, src/kube/leader-election.ts):
// each case has a namespace of its own, the Lease `hookguard` in it, and candidates acting as a ServiceAccount with
// the chart's leader-election Role (copied from where the cluster installed it: create, and get/update of that
// Lease only). Each candidate talks to the API server through a fault proxy of its own (support/fault-proxy.ts), so
// its calls can be counted and, for a partition, refused; the 409s and the stored times are the API server's.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kubeSelfTestClient } from '../../src/controllers/selftest/client.js';
import { kubeLeaseLock, LeaderElector, type LeaderElectionSettings } from '../../src/kube/leader-election.js';
import { capturedLogger, eventually, type LogLine } from '../support/log-sink.js';
import { HOOKGUARD_NAMESPACE } from './cluster.js';
import { deleteNamespace, describeCluster, kubectl, kubectlJson, newNamespace } from './support/cluster.js';
import { FaultProxy, serviceAccountToken } from './support/fault-proxy.js';

// Looser than the chart's 15 s / 10 s / 2 s, to be quick, and than a stand-in's, for a loaded machine's API server.
const SETTINGS: Omit<LeaderElectionSettings, 'leaseNamespace'> = {
  leaseName: 'hookguard',
  leaseDurationSeconds: 4,
  renewDeadlineMs: 3000,
  retryPeriodMs: 1000,
};

interface Candidate {
  elector: LeaderElector;
  proxy: FaultProxy;
  lines: LogLine[];
  /** When it started and stopped leading (performance.now()). */
  terms: Array<{ from: number; to?: number }>;
}

interface LeaseSpec {
  holderIdentity?: string;
  leaseDurationSeconds?: number;
  leaseTransitions?: number;
  acquireTime?: string;
  renewTime?: string;
}

/** The chart's Role for the Lease, as the cluster installed it in hookguard's namespace. */
let leaseRole: { rules: unknown[] };
const namespaces: string[] = [];
const stops: Array<() => Promise<void>> = [];

beforeAll(async () => {
  leaseRole = await kubectlJson(['get', 'role', 'hookguard-leader-election', '-n', HOOKGUARD_NAMESPACE]);
});
afterAll(async () => {
  await Promise.all(stops.map((stop) => stop()));
  await Promise.all(namespaces.map(deleteNamespace));
});

/** A namespace, and a token of a ServiceAccount `hookguard` in it holding the chart's leader-election Role there. */
async function leaseNamespace(): Promise<{ namespace: string; token: string }> {
  const namespace = await newNamespace('leader-election');
  namespaces.push(namespace);
  const objects = [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'hookguard', namespace } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'Role',
      metadata: { name: 'hookguard-leader-election', namespace },
      rules: leaseRole.rules,
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: 'hookguard-leader-election', namespace },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'hookguard-leader-election' },
      subjects: [{ kind: 'ServiceAccount', name: 'hookguard', namespace }],
    },
  ];
  await kubectl(['apply', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items: objects }));
  return { namespace, token: await serviceAccountToken(namespace, 'hookguard') };
}

async function candidate(where: { namespace: string; token: string }, name: string): Promise<Candidate> {
  const proxy = await FaultProxy.start();
  const { logger, lines } = capturedLogger('debug');
  const terms: Candidate['terms'] = [];
  const settings = { ...SETTINGS, leaseNamespace: where.namespace };
  const elector = new LeaderElector(
    kubeLeaseLock(proxy.kubeConfig(where.token), where.namespace, SETTINGS.leaseName),
    name,
    settings,
    logger,
    {
      started: () => terms.push({ from: performance.now() }),
      stopped: () => (terms.at(-1)!.to = performance.now()),
    },
  );
  stops.push(async () => {
    await elector.stop();
    await proxy.stop();
  });
  return { elector, proxy, lines, terms };
}

/** a leading, then b started beside it and seeing a as the leader. */
async function twoCandidates(where: { namespace: string; token: string }): Promise<[Candidate, Candidate]> {
  const a = await candidate(where, 'a');
  a.elector.start();
  await eventually(() => a.elector.isLeader, 'a leads', 10_000);
  const b = await candidate(where, 'b');
  b.elector.start();
  await eventually(() => b.elector.leader === 'a', 'b sees a as the leader', 10_000);
  return [a, b];
}

const lease = async (namespace: string) =>
  (await kubectlJson<{ spec: LeaseSpec }>(['get', 'lease', SETTINGS.leaseName, '-n', namespace])).spec;

/** No two terms overlap. */
function overlaps(a: Candidate, b: Candidate): boolean {
  return a.terms.some((x) => b.terms.some((y) => x.from < (y.to ?? Infinity) && y.from < (x.to ?? Infinity)));
}

const messages = (who: Candidate) => who.lines.map((line) => line.msg);
const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describeCluster('leader election (client-go protocol) over a real Lease', () => {
  describe.concurrent('two candidates', () => {
    it('one of two candidates leads; the other waits; the Lease says who, with times in microseconds', async () => {
      const where = await leaseNamespace();
      const [a, b] = await twoCandidates(where);
      await pause(2.5 * SETTINGS.retryPeriodMs);
      expect([a.elector.isLeader, b.elector.isLeader]).toEqual([true, false]);
      const spec = await lease(where.namespace);
      expect(spec).toMatchObject({ holderIdentity: 'a', leaseDurationSeconds: 4, leaseTransitions: 0 });
      expect(spec.renewTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
      expect(spec.acquireTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
      // The leader renews with PUTs; the candidate only reads.
      const puts = (who: Candidate) =>
        who.proxy.requests.filter((request) => request.method === 'PUT' && request.status === 200).length;
      expect(puts(a)).toBeGreaterThanOrEqual(2);
      expect(b.proxy.requests.map((request) => request.method)).not.toContain('PUT');
      expect(messages(a)).toContain('leading: acquired the Lease');
      expect(b.lines).toContainEqual(
        expect.objectContaining({ msg: 'another replica leads', leader: 'a', lease: `${where.namespace}/hookguard` }),
      );
    });

    it('hands over at once when the leader stops: it releases the Lease, and the count of transitions goes up', async () => {
      const where = await leaseNamespace();
      const [a, b] = await twoCandidates(where);
      const stopped = performance.now();
      await a.elector.stop();
      expect(messages(a)).toContain('released the Lease');
      await eventually(() => b.elector.isLeader, 'b leads', 10_000);
      // A released Lease is free at b's next try (retryPeriod plus jitter up to 1.2 times that), not after leaseDuration.
      expect(performance.now() - stopped).toBeLessThan(SETTINGS.leaseDurationSeconds * 1000);
      expect(await lease(where.namespace)).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 });
      expect(overlaps(a, b)).toBe(false);
    });

    it('a leader that cannot renew stops within renewDeadlineMs, before anyone else may take over', async () => {
      const where = await leaseNamespace();
      const [a, b] = await twoCandidates(where);
      // a's requests fail from now on (a partition between a and the API server); b's go through.
      a.proxy.fail({ pathIncludes: '/leases', status: 503, times: 1_000 });
      const cut = performance.now();
      await eventually(() => !a.elector.isLeader, 'a stops leading', 10_000);
      const stoppedAfter = performance.now() - cut;
      await eventually(() => b.elector.isLeader, 'b leads', 15_000);
      const takenOverAfter = performance.now() - cut;
      expect(stoppedAfter).toBeLessThan(SETTINGS.renewDeadlineMs + SETTINGS.retryPeriodMs + 500);
      // b waits a whole leaseDuration from the last renewal it saw.
      expect(takenOverAfter).toBeGreaterThan(SETTINGS.leaseDurationSeconds * 1000 - SETTINGS.retryPeriodMs);
      expect(a.lines).toContainEqual(
        expect.objectContaining({
          level: 40,
          msg: 'stopped leading: could not renew the Lease in time',
          identity: 'a',
          lease: `${where.namespace}/hookguard`,
          renewDeadlineMs: 3000,
        }),
      );
      expect(a.proxy.requests.filter((request) => request.status === 503).length).toBeGreaterThan(0);
      expect(overlaps(a, b)).toBe(false);
      expect(await lease(where.namespace)).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 });
    });

    it('two candidates starting together: one creates the Lease, the other gets 409 and waits', async () => {
      const where = await leaseNamespace();
      const a = await candidate(where, 'a');
      const b = await candidate(where, 'b');
      // Both read "no Lease" (404) before either creates it, so that both POST.
      let readers = 0;
      let bothRead: () => void = () => undefined;
      const read = new Promise<void>((resolve) => (bothRead = resolve));
      for (const proxy of [a.proxy, b.proxy])
        proxy.beforeForward = async ({ method }) => {
          if (method !== 'POST') return;
          if (++readers === 2) bothRead();
          await read;
        };
      a.elector.start();
      b.elector.start();
      await eventually(() => a.elector.isLeader || b.elector.isLeader, 'someone leads', 10_000);
      // The loser's 409 may still be on its way when the winner leads: wait for both answers, then for a retry.
      const createStatuses = () =>
        [...a.proxy.requests, ...b.proxy.requests]
          .filter((request) => request.method === 'POST')
          .map((request) => request.status);
      await eventually(
        () => createStatuses().length === 2 && createStatuses().every((status) => status !== 0),
        'both creates answered',
        10_000,
      );
      await pause(1.5 * SETTINGS.retryPeriodMs);
      expect([a.elector.isLeader, b.elector.isLeader].filter(Boolean)).toHaveLength(1);
      expect(overlaps(a, b)).toBe(false);
      expect(createStatuses().sort()).toEqual([201, 409]);
    });

    it('a leader whose Lease another replica took (after a long pause) stops at its next renewal', async () => {
      const where = await leaseNamespace();
      const a = await candidate(where, 'a');
      a.elector.start();
      await eventually(() => a.elector.isLeader, 'a leads', 10_000);
      await kubectl([
        'patch',
        'lease',
        'hookguard',
        '-n',
        where.namespace,
        '--type=merge',
        '-p',
        '{"spec":{"holderIdentity":"intruder"}}',
      ]);
      await eventually(() => !a.elector.isLeader, 'a stops leading', 10_000);
      expect(a.lines).toContainEqual(
        expect.objectContaining({
          level: 40,
          msg: 'stopped leading: another replica holds the Lease',
          identity: 'a',
          leader: 'intruder',
        }),
      );
    });
  });

  it('abandons an API call when its signal aborts, even when the API server never answers', async () => {
    const proxy = await FaultProxy.start();
    stops.push(() => proxy.stop());
    // The proxy holds every request and never forwards it: an API server that accepted the connection and hangs.
    proxy.beforeForward = () => new Promise<void>(() => undefined);
    const started = performance.now();
    await expect(
      kubeSelfTestClient(proxy.kubeConfig('no-token-needed')).readStatusObject(AbortSignal.timeout(200)),
    ).rejects.toThrow(/abort/i);
    expect(performance.now() - started).toBeLessThan(2000);
    expect(proxy.requests.map((request) => `${request.method} ${request.path} ${request.status}`)).toEqual([
      'GET /apis/hookguard.io/v1alpha1/hookguards/hookguard 0',
    ]);
  });
});
