// The fault proxy the cluster tests put in front of the real API server (support/fault-proxy.ts): what it passes on
// is the API server's own answer, and the faults it makes are the ones it promises.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { CoreV1Api, Watch } from '@kubernetes/client-node';
import { deleteNamespace, describeCluster, kubectl, newNamespace, waitUntil } from './support/cluster.js';
import { FaultProxy, serviceAccountToken } from './support/fault-proxy.js';

describeCluster('the fault proxy in front of the real API server', () => {
  let ns = '';
  let proxy: FaultProxy;
  let token = '';

  beforeAll(async () => {
    ns = await newNamespace('fault-proxy');
    await kubectl(['create', 'serviceaccount', 'reader', '-n', ns]);
    await kubectl(['create', 'role', 'reader', '-n', ns, '--verb=get,list,watch', '--resource=configmaps']);
    await kubectl(['create', 'rolebinding', 'reader', '-n', ns, '--role=reader', `--serviceaccount=${ns}:reader`]);
    token = await serviceAccountToken(ns, 'reader');
    proxy = await FaultProxy.start();
  });
  afterAll(async () => {
    await proxy?.stop();
    await deleteNamespace(ns);
  });

  it("passes the token on: the real RBAC answers, in the API server's words", async () => {
    const core = proxy.kubeConfig(token).makeApiClient(CoreV1Api);
    expect((await core.listNamespacedConfigMap({ namespace: ns })).items.map((item) => item.metadata?.name)).toEqual([
      'kube-root-ca.crt',
    ]);
    await expect(core.listNamespacedSecret({ namespace: ns })).rejects.toMatchObject({
      code: 403,
      body: expect.stringContaining(
        `secrets is forbidden: User \\"system:serviceaccount:${ns}:reader\\" cannot list resource \\"secrets\\" in API group \\"\\" in the namespace \\"${ns}\\"`,
      ),
    });
    expect(proxy.requests.slice(-2).map(({ method, path, user, status }) => ({ method, path, user, status }))).toEqual([
      {
        method: 'GET',
        path: `/api/v1/namespaces/${ns}/configmaps`,
        user: `system:serviceaccount:${ns}:reader`,
        status: 200,
      },
      {
        method: 'GET',
        path: `/api/v1/namespaces/${ns}/secrets`,
        user: `system:serviceaccount:${ns}:reader`,
        status: 403,
      },
    ]);
  });

  it('answers an injected 429 as the priority-and-fairness filter does, then passes the next one on', async () => {
    proxy.fail({ method: 'GET', pathIncludes: '/configmaps', status: 429, retryAfterSeconds: 2 });
    const url = `${proxy.url}/api/v1/namespaces/${ns}/configmaps`;
    const headers = { authorization: `Bearer ${token}` };
    const refused = await fetch(url, { headers });
    expect([refused.status, refused.headers.get('retry-after'), await refused.text()]).toEqual([
      429,
      '2',
      'Too many requests, please try again later.\n',
    ]);
    expect((await fetch(url, { headers })).status).toBe(200);
  });

  it('ends an open watch with a 410 Expired ERROR event, and cuts one mid-stream', async () => {
    const watch = new Watch(proxy.kubeConfig(token));
    const seen: Array<{ type: string; code?: number; reason?: string }> = [];
    const ended: Array<unknown> = [];
    const start = () =>
      watch.watch(
        `/api/v1/namespaces/${ns}/configmaps`,
        {},
        (type, object: { code?: number; reason?: string }) =>
          seen.push(type === 'ERROR' ? { type, code: object.code, reason: object.reason } : { type }),
        (error) => ended.push(error ?? 'ended'),
      );
    await start();
    await waitUntil('the watch open and its first event', async () => proxy.openWatches === 1 && seen.length === 1);
    proxy.expireWatches();
    await waitUntil('the watch ended', async () => ended.length === 1);
    expect(seen).toEqual([{ type: 'ADDED' }, { type: 'ERROR', code: 410, reason: 'Expired' }]);

    await start();
    await waitUntil('the second watch open', async () => proxy.openWatches === 1);
    proxy.dropWatches();
    await waitUntil('the second watch ended', async () => ended.length === 2);
    expect(ended[1]).toBeInstanceOf(Error);
  });

  it('goes away and comes back on the same port', async () => {
    const core = proxy.kubeConfig(token).makeApiClient(CoreV1Api);
    const port = proxy.port;
    await proxy.stop();
    await expect(core.listNamespacedConfigMap({ namespace: ns })).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    await proxy.restart();
    expect(proxy.port).toBe(port);
    expect((await core.listNamespacedConfigMap({ namespace: ns })).items).toHaveLength(1);
  });
});
