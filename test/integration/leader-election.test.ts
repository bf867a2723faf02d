// Leader election over a coordination.k8s.io/v1 Lease, against a stand-in for kube-apiserver
// (test/support/fake-apiserver.ts answers Lease GET, POST (409 AlreadyExists) and PUT with resourceVersion
// conflicts (409), and refuses Lease times without microseconds, as the API server does).
import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { kubeLeaseLock, LeaderElector, type LeaderElectionSettings } from '../../src/kube/leader-election.js';
import { kubeSelfTestClient } from '../../src/controllers/selftest/client.js';
import { FakeApiServer, kubeConfigOptions, type KubeItem } from '../support/fake-apiserver.js';
import { capturedLogger, eventually, type LogLine } from '../support/log-sink.js';
import { KubeConfig } from '@kubernetes/client-node';

const SETTINGS: LeaderElectionSettings = {
  leaseName: 'hookguard',
  leaseNamespace: 'hookguard',
  leaseDurationSeconds: 1,
  renewDeadlineMs: 600,
  retryPeriodMs: 100,
};

let cleanup: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const step of cleanup.reverse()) await step();
  cleanup = [];
});

interface Candidate {
  elector: LeaderElector;
  lines: LogLine[];
  /** When it started and stopped leading (performance.now()). */
  terms: Array<{ from: number; to?: number }>;
}

async function fakeServer(): Promise<FakeApiServer> {
  const server = await new FakeApiServer().start();
  cleanup.push(() => server.stop());
  return server;
}

function candidate(server: FakeApiServer, name: string, settings = SETTINGS): Candidate {
  const { logger, lines } = capturedLogger('debug');
  const terms: Candidate['terms'] = [];
  const elector = new LeaderElector(
    kubeLeaseLock(server.kubeConfig(name), settings.leaseNamespace, settings.leaseName),
    name,
    settings,
    logger,
    {
      started: () => terms.push({ from: performance.now() }),
      stopped: () => (terms.at(-1)!.to = performance.now()),
    },
  );
  cleanup.push(() => elector.stop());
  return { elector, lines, terms };
}

const lease = (server: FakeApiServer) =>
  server.get('Lease', 'hookguard', 'hookguard') as KubeItem & { spec: Record<string, unknown> };

/** No two terms overlap. */
function overlaps(a: Candidate, b: Candidate): boolean {
  return a.terms.some((x) => b.terms.some((y) => x.from < (y.to ?? Infinity) && y.from < (x.to ?? Infinity)));
}

describe('leader election (client-go protocol) against the stand-in API server', () => {
  it('one of two candidates leads; the other waits; the Lease says who, with times in microseconds', async () => {
    const server = await fakeServer();
    const a = candidate(server, 'a');
    a.elector.start();
    await eventually(() => a.elector.isLeader, 'a leads');
    const b = candidate(server, 'b');
    b.elector.start();
    await eventually(() => b.elector.leader === 'a', 'b sees a as the leader');
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect([a.elector.isLeader, b.elector.isLeader]).toEqual([true, false]);
    const spec = lease(server).spec;
    expect(spec).toMatchObject({ holderIdentity: 'a', leaseDurationSeconds: 1, leaseTransitions: 0 });
    expect(spec.renewTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/);
    // The leader renews with PUTs; the candidate only reads.
    const puts = (user: string) =>
      server.requests.filter((request) => request.user === user && request.method === 'PUT').length;
    expect(puts('a')).toBeGreaterThan(2);
    expect(puts('b')).toBe(0);
    expect(b.lines.map((line) => line.msg)).toContain('another replica leads');
  });

  it('hands over at once when the leader stops: it releases the Lease, and the count of transitions goes up', async () => {
    const server = await fakeServer();
    const a = candidate(server, 'a');
    a.elector.start();
    await eventually(() => a.elector.isLeader, 'a leads');
    const b = candidate(server, 'b');
    b.elector.start();
    await eventually(() => b.elector.leader === 'a', 'b sees a');
    const stopped = performance.now();
    await a.elector.stop();
    expect(a.lines.map((line) => line.msg)).toContain('released the Lease');
    await eventually(() => b.elector.isLeader, 'b leads', 3000);
    // A released Lease is free at b's next try (retryPeriod plus jitter up to 1.2 times that), not after leaseDuration.
    expect(performance.now() - stopped).toBeLessThan(SETTINGS.leaseDurationSeconds * 1000);
    expect(lease(server).spec).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 });
    expect(overlaps(a, b)).toBe(false);
  });

  it('a leader that cannot renew stops within renewDeadlineMs, before anyone else may take over', async () => {
    const server = await fakeServer();
    const a = candidate(server, 'a');
    a.elector.start();
    await eventually(() => a.elector.isLeader, 'a leads');
    const b = candidate(server, 'b');
    b.elector.start();
    await eventually(() => b.elector.leader === 'a', 'b sees a');
    // a's requests fail from now on (a partition between a and the API server); b's go through.
    server.fail({ user: 'a', pathIncludes: '/leases', status: 503, times: 1_000 });
    const cut = performance.now();
    await eventually(() => !a.elector.isLeader, 'a stops leading', 3000);
    const stoppedAfter = performance.now() - cut;
    await eventually(() => b.elector.isLeader, 'b leads', 5000);
    const takenOverAfter = performance.now() - cut;
    expect(stoppedAfter).toBeLessThan(SETTINGS.renewDeadlineMs + SETTINGS.retryPeriodMs + 200);
    // b waits a whole leaseDuration from the last renewal it saw.
    expect(takenOverAfter).toBeGreaterThan(SETTINGS.leaseDurationSeconds * 1000 - SETTINGS.retryPeriodMs);
    expect(a.lines.map((line) => line.msg)).toContain('stopped leading: could not renew the Lease in time');
    expect(overlaps(a, b)).toBe(false);
    expect(lease(server).spec).toMatchObject({ holderIdentity: 'b', leaseTransitions: 1 });
  });

  it('two candidates starting together: one creates the Lease, the other gets 409 and waits', async () => {
    const server = await fakeServer();
    const a = candidate(server, 'a');
    const b = candidate(server, 'b');
    a.elector.start();
    b.elector.start();
    await eventually(() => a.elector.isLeader || b.elector.isLeader, 'someone leads');
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect([a.elector.isLeader, b.elector.isLeader].filter(Boolean)).toHaveLength(1);
    expect(overlaps(a, b)).toBe(false);
    const creates = server.requests.filter((request) => request.method === 'POST').map((request) => request.status);
    expect(creates.sort()).toEqual([201, 409]);
  });

  it('a leader whose Lease another replica took (after a long pause) stops at its next renewal', async () => {
    const server = await fakeServer();
    const a = candidate(server, 'a');
    a.elector.start();
    await eventually(() => a.elector.isLeader, 'a leads');
    server.modify('Lease', 'hookguard', 'hookguard', (object) => {
      (object.spec as Record<string, unknown>).holderIdentity = 'intruder';
    });
    await eventually(() => !a.elector.isLeader, 'a stops leading', 2000);
    expect(a.lines.map((line) => line.msg)).toContain('stopped leading: another replica holds the Lease');
  });
});

describe('API calls with a deadline', () => {
  it('are abandoned when their signal aborts, even when the API server never answers', async () => {
    const silent: Server = createServer(() => undefined);
    await new Promise<void>((resolve) => silent.listen(0, '127.0.0.1', resolve));
    cleanup.push(async () => {
      silent.close();
    });
    const kubeConfig = new KubeConfig();
    const port = (silent.address() as { port: number }).port;
    kubeConfig.loadFromOptions(kubeConfigOptions(`http://127.0.0.1:${port}`, 'hookguard'));
    const started = performance.now();
    await expect(kubeSelfTestClient(kubeConfig).readStatusObject(AbortSignal.timeout(200))).rejects.toThrow(/abort/i);
    expect(performance.now() - started).toBeLessThan(2000);
  });
});
