// How hookguard finds the API server: KUBECONFIG, else the in-cluster service account, else ~/.kube/config,
// as kubectl does. Nothing found means "outside a cluster": callers turn discovery off, sweep refuses to run.
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { KubeConfig } from '@kubernetes/client-node';

const SERVICE_ACCOUNT_TOKEN = '/var/run/secrets/kubernetes.io/serviceaccount/token';

export interface KubeConnection {
  kubeConfig: KubeConfig;
  /** Where it came from, for the log. */
  source: string;
}

type Env = Readonly<Record<string, string | undefined>>;

/**
 * The API server connection the environment describes, or undefined when there is none. `rootPrefix` moves
 * the service account's files (`/var/run/secrets/kubernetes.io/serviceaccount/…`) under another root, for tests.
 */
export function kubeConnection(env: Env, rootPrefix = ''): KubeConnection | undefined {
  const kubeConfig = new KubeConfig();
  // Like kubectl, the first file of a KUBECONFIG list that exists.
  const fromEnv = (env.KUBECONFIG ?? '').split(':').find((path) => path !== '' && existsSync(path));
  if (fromEnv !== undefined) {
    kubeConfig.loadFromFile(fromEnv);
    return { kubeConfig, source: `kubeconfig ${fromEnv}` };
  }
  if (env.KUBERNETES_SERVICE_HOST && existsSync(`${rootPrefix}${SERVICE_ACCOUNT_TOKEN}`)) {
    kubeConfig.loadFromCluster(rootPrefix);
    return { kubeConfig, source: 'in-cluster service account' };
  }
  const home = env.HOME ? join(env.HOME, '.kube', 'config') : undefined;
  if (home !== undefined && existsSync(home)) {
    kubeConfig.loadFromFile(home);
    return { kubeConfig, source: `kubeconfig ${home}` };
  }
  return undefined;
}

/**
 * Why kubeConnection() found no cluster, for a command that needs one (`what`: "no cluster", "no cluster to
 * sweep"): a KUBECONFIG that is set names the files it could not read, and what else was looked for.
 */
export function noClusterProblem(env: Env, what = 'no cluster'): string {
  const named = (env.KUBECONFIG ?? '').split(':').filter((path) => path !== '');
  if (named.length === 0) return `${what}: set KUBECONFIG, or run in a pod with a service account`;
  const files = named.length === 1 ? `the file ${named[0]}` : `the files ${named.join(', ')}`;
  return `${what}: KUBECONFIG names ${files}, which could not be read (no such file), and there is neither an in-cluster service account nor ~/.kube/config: point KUBECONFIG at your kubeconfig file`;
}

function jwtSubject(token: string): string | undefined {
  const payload = token.split('.')[1];
  if (payload === undefined) return undefined;
  try {
    const claims = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8')) as { sub?: unknown };
    return typeof claims.sub === 'string' ? claims.sub : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Who is acting, for audit lines: a service account token names its account (`sub`, read and not verified:
 * the API server verifies it); otherwise the kubeconfig's user and context.
 */
export function actingIdentity(kubeConfig: KubeConfig): string {
  const user = kubeConfig.getCurrentUser();
  // client-node types authProvider as any; the in-cluster config puts the token file in its config.
  const authProvider = user?.authProvider as { config?: { tokenFile?: unknown } } | undefined;
  const tokenFile = typeof authProvider?.config?.tokenFile === 'string' ? authProvider.config.tokenFile : undefined;
  let token = user?.token;
  if (token === undefined && tokenFile !== undefined) {
    try {
      token = readFileSync(tokenFile, 'utf8').trim();
    } catch {
      token = undefined;
    }
  }
  const subject = token === undefined ? undefined : jwtSubject(token);
  if (subject !== undefined) return subject;
  return `kubeconfig user ${user?.name ?? 'unknown'} (context ${kubeConfig.getCurrentContext()})`;
}
