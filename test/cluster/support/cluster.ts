// What the cluster tests use of the real control plane test/cluster/cluster.js runs: its kubeconfig, kubectl and both
// Helms as built, and waits that report what they last saw.
import { execFile, type ExecFileException } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import {
  ApiException,
  CoreV1Api,
  KubeConfig,
  KubernetesObjectApi,
  PatchStrategy,
  setHeaderOptions,
  type ApiConstructor,
  type ApiType,
} from '@kubernetes/client-node';
import { describe, inject } from 'vitest';
import { repoRoot } from '../../support/k8s-tools.js';
import { ARGOCD_CONTROLLER_ACCOUNT } from '../../support/objects.js';
import { waitUntil } from '../../support/wait-until.js';

export { waitUntil };

export const clusterDir = join(repoRoot, '.cluster');
export const kubeconfig = join(clusterDir, 'kubeconfig');
export const binDir = join(clusterDir, 'bin');
export const kubectlPath = join(binDir, 'kubectl');
export const helm4Path = join(binDir, 'helm');
export const helm3Path = join(binDir, 'helm3');
export const hookguardLog = join(clusterDir, 'logs', 'hookguard.log');
/** Namespaces with this label are out of the cluster hookguard's webhooks' reach (cluster.js AUDIT_NAMESPACE_LABEL). */
export const AUDIT_NAMESPACE_LABEL = 'hookguard.test/audit';

/** describe() when the cluster is up, describe.skip() (with the reason in the name) where it cannot run. */
export function describeCluster(name: string, body: () => void): void {
  const unavailable = inject('clusterUnavailable');
  if (unavailable) describe.skip(`${name} (${unavailable})`, body);
  else describe(name, body);
}

export interface Run {
  status: number;
  stdout: string;
  stderr: string;
}

/** Runs a program with the cluster's admin kubeconfig, never throwing: the status says how it ended. */
export function run(
  file: string,
  args: readonly string[],
  options: { input?: string; env?: Record<string, string> } = {},
): Promise<Run> {
  return new Promise((resolve) => {
    const child = execFile(
      file,
      args,
      {
        cwd: repoRoot,
        env: {
          PATH: `${binDir}:${process.env.PATH ?? ''}`,
          HOME: process.env.HOME ?? '/root',
          KUBECONFIG: kubeconfig,
          ...options.env,
        },
        maxBuffer: 64 * 1024 * 1024,
        timeout: 300_000,
      },
      (error: ExecFileException | null, stdout, stderr) => {
        resolve({ status: error ? (typeof error.code === 'number' ? error.code : 1) : 0, stdout, stderr });
      },
    );
    if (options.input !== undefined) child.stdin?.end(options.input);
  });
}

/** kubectl ARGS as the admin; throws with kubectl's own message when it fails. */
export async function kubectl(args: readonly string[], input?: string): Promise<string> {
  const result = await run(kubectlPath, args, input === undefined ? {} : { input });
  if (result.status !== 0)
    throw new Error(`kubectl ${args.join(' ')} failed (${result.status}): ${result.stderr.trim()}`);
  return result.stdout;
}

export async function kubectlJson<T = Record<string, unknown>>(args: readonly string[]): Promise<T> {
  return JSON.parse(await kubectl([...args, '-o', 'json'])) as T;
}

/** The admin's KubeConfig, straight to the API server. */
export function adminKubeConfig(): KubeConfig {
  const config = new KubeConfig();
  config.loadFromFile(kubeconfig);
  return config;
}

// One client of each API class for the admin, in this process: a kubectl process costs a tenth of a second of CPU,
// and the namespaces' alone were a fifth of the kubectl runs.
const adminClients = new Map<ApiConstructor<ApiType>, ApiType>();

/** The admin's client of API class `Api` (CoreV1Api, RbacAuthorizationV1Api, …), made once per test process. */
export function adminApi<Api extends ApiType>(api: ApiConstructor<Api>): Api {
  let client = adminClients.get(api);
  if (!client) adminClients.set(api, (client = adminKubeConfig().makeApiClient(api)));
  return client as Api;
}

let adminObjects: KubernetesObjectApi | undefined;

/** The admin's client for objects of any kind in this process, as `kubectl create -f` takes them. */
export function adminObjectApi(): KubernetesObjectApi {
  return (adminObjects ??= KubernetesObjectApi.makeApiClient(adminKubeConfig()));
}

/** client-node sends a merge patch's content type unless told. */
export const JSON_PATCH = setHeaderOptions('Content-Type', PatchStrategy.JsonPatch);

/** What `request` answers, or undefined when the API server answers 404 (the object is not there). */
export async function unlessNotFound<T>(request: Promise<T>): Promise<T | undefined> {
  try {
    return await request;
  } catch (error) {
    if (error instanceof ApiException && error.code === 404) return undefined;
    throw error;
  }
}

/** Waits for a delete, and takes an object already gone for deleted, as `kubectl delete --ignore-not-found` does. */
export async function ignoringNotFound(deletion: Promise<unknown>): Promise<void> {
  await unlessNotFound(deletion);
}

/** A namespace of its own for one test, with a name no other test takes. */
export async function newNamespace(prefix: string, labels: Record<string, string> = {}): Promise<string> {
  const name = `${prefix}-${randomBytes(3).toString('hex')}`;
  await adminApi(CoreV1Api).createNamespace({ body: { metadata: { name, labels } } });
  // The ServiceAccount controller makes `default` a moment later; Pods that name no ServiceAccount need it.
  await waitUntil(`ServiceAccount default in ${name}`, () =>
    adminApi(CoreV1Api).readNamespacedServiceAccount({ name: 'default', namespace: name }),
  );
  return name;
}

/**
 * Lets Argo CD's application controller (its ServiceAccount, impersonated by the tests) create in `ns`: hookguard's
 * guard (rule min-runtime) is for the hooks Argo CD applies.
 */
export async function allowArgoCdController(ns: string): Promise<void> {
  const { namespace, name } = ARGOCD_CONTROLLER_ACCOUNT;
  await kubectl([
    'create',
    'rolebinding',
    'argocd',
    '--clusterrole=admin',
    `--serviceaccount=${namespace}:${name}`,
    '-n',
    ns,
  ]);
}

/** ServiceAccounts of these names in `ns`, made by one kubectl (a kubectl each costs a tenth of a second of CPU). */
export async function createServiceAccounts(ns: string, names: readonly string[]): Promise<void> {
  if (names.length === 0) return;
  const items = names.map((name) => ({ apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name, namespace: ns } }));
  await kubectl(['create', '-f', '-'], JSON.stringify({ apiVersion: 'v1', kind: 'List', items }));
}

/** Starts deleting namespace NAME, if it is there, without waiting for it to go. */
export async function deleteNamespace(name: string): Promise<void> {
  try {
    await adminApi(CoreV1Api).deleteNamespace({ name });
  } catch (error) {
    if (!(error instanceof ApiException && (error.code === 404 || error.code === 409))) throw error;
  }
}

/** What cluster.js wrote of the cluster it started: its processes and their ports. */
export interface ClusterState {
  pids: Record<string, number>;
  ports: Record<string, number>;
}

export function clusterState(): ClusterState {
  return JSON.parse(readFileSync(join(clusterDir, 'state.json'), 'utf8')) as ClusterState;
}

/** hookguard's log lines (JSON) written so far by the server the cluster runs. */
export function hookguardLogLines(): Array<Record<string, unknown>> {
  return readFileSync(hookguardLog, 'utf8')
    .split('\n')
    .filter((line) => line.startsWith('{'))
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}
