import { copyFileSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { KubeConfig } from '@kubernetes/client-node';
import { actingIdentity, kubeConnection } from '../../src/kube/kubeconfig.js';

const dir = mkdtempSync(join(tmpdir(), 'hookguard-kubeconfig-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A kubeconfig file as kubectl writes it (client-node's exportConfig), for user `alice` with the given token. */
function kubeconfigFile(name: string, token = 'plain'): string {
  const kubeConfig = new KubeConfig();
  kubeConfig.loadFromOptions({
    clusters: [{ name: 'test', server: 'https://10.0.0.1:6443' }],
    users: [{ name: 'alice', token }],
    contexts: [{ name: 'test', cluster: 'test', user: 'alice' }],
    currentContext: 'test',
  });
  const path = join(dir, name);
  writeFileSync(path, kubeConfig.exportConfig());
  return path;
}

/**
 * A token shaped as the TokenRequest API issues one (a JWT whose `sub` is the account): hookguard reads the subject
 * and never verifies the signature (the API server does), so an unsigned one serves; nothing here calls a server.
 */
function serviceAccountToken(subject: string): string {
  const part = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');
  return `${part({ alg: 'RS256' })}.${part({ iss: 'https://kubernetes.default.svc', sub: subject })}.unsigned`;
}

// A root with no service account files under it.
const NO_TOKEN = join(dir, 'no-such-root');

describe('kubeConnection', () => {
  it('is undefined outside a cluster: no KUBECONFIG, no service account, no ~/.kube/config', () => {
    expect(kubeConnection({ HOME: dir }, NO_TOKEN)).toBeUndefined();
    expect(
      kubeConnection({ KUBERNETES_SERVICE_HOST: '10.0.0.1', KUBERNETES_SERVICE_PORT: '443' }, NO_TOKEN),
    ).toBeUndefined();
  });

  it('takes the first existing file of KUBECONFIG', () => {
    const path = kubeconfigFile('first.yaml');
    const connection = kubeConnection({ KUBECONFIG: `${join(dir, 'missing.yaml')}:${path}` }, NO_TOKEN);
    expect(connection?.source).toBe(`kubeconfig ${path}`);
    expect(connection?.kubeConfig.getCurrentCluster()?.server).toBe('https://10.0.0.1:6443');
  });

  it('falls back to ~/.kube/config', () => {
    const home = mkdtempSync(join(dir, 'home-'));
    const target = join(home, '.kube', 'config');
    mkdirSync(join(home, '.kube'));
    copyFileSync(kubeconfigFile('home.yaml'), target);
    expect(kubeConnection({ HOME: home }, NO_TOKEN)?.source).toBe(`kubeconfig ${target}`);
  });
});

describe('actingIdentity', () => {
  it('names the service account a token was issued to', () => {
    const path = kubeconfigFile('sa.yaml', serviceAccountToken('system:serviceaccount:hookguard:hookguard-sweep'));
    expect(actingIdentity(kubeConnection({ KUBECONFIG: path }, NO_TOKEN)!.kubeConfig)).toBe(
      'system:serviceaccount:hookguard:hookguard-sweep',
    );
  });

  it('names the service account of the in-cluster token (what the sweep CronJob runs as)', () => {
    const root = mkdtempSync(join(dir, 'root-'));
    const accountDir = join(root, 'var/run/secrets/kubernetes.io/serviceaccount');
    mkdirSync(accountDir, { recursive: true });
    writeFileSync(
      join(accountDir, 'token'),
      `${serviceAccountToken('system:serviceaccount:hookguard:hookguard-sweep')}\n`,
    );
    writeFileSync(join(accountDir, 'namespace'), 'hookguard');
    const connection = kubeConnection({ KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443' }, root);
    expect(connection?.source).toBe('in-cluster service account');
    expect(actingIdentity(connection!.kubeConfig)).toBe('system:serviceaccount:hookguard:hookguard-sweep');
  });

  it('names the kubeconfig user and context otherwise', () => {
    const path = kubeconfigFile('user.yaml', 'not-a-jwt');
    expect(actingIdentity(kubeConnection({ KUBECONFIG: path }, NO_TOKEN)!.kubeConfig)).toBe(
      'kubeconfig user alice (context test)',
    );
  });
});
