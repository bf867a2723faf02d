// Flux's real helm-controller v1.6.2 (test/cluster/tools/helm-controller, built by cluster.js, never started by it)
// run by a test as a process of its own, watching only the test's namespace, with what it needs and no more:
//
// - The CRDs it reads: HelmRelease (test/cluster/flux, v1.6.3's, the same in v1.6.2) and the source kinds it watches
//   (source-controller v1.9.0's ExternalArtifact, HelmChart, OCIRepository: the manager will not start without them).
// - A chart to install, without source-controller: an ExternalArtifact (chartRef kind ExternalArtifact, behind the
//   feature gate ExternalArtifact), the kind Flux has for artifacts a controller other than source-controller
//   produces. The test is that producer: it packages the chart with the real helm 4.3.2, serves the .tgz from a small
//   HTTP server on 127.0.0.1 and writes status.artifact (url, digest, revision) as such a producer does;
//   helm-controller downloads it and checks its digest (internal/loader/artifact_url.go SecureLoadChartFromURL).
// - An identity: the ServiceAccount helm-controller in the namespace, bound to the ClusterRole cluster-admin by a
//   RoleBinding in each namespace it deploys to. Upstream binds cluster-admin cluster-wide (flux2
//   manifests/rbac/reconciler.yaml, cluster-reconciler); confined here to the namespaces of one test, so that
//   processes of cases side by side cannot touch each other's namespaces, and the API server (and hookguard's
//   webhook, where it reaches) sees a ServiceAccount, as in a cluster, not the admin's system:masters.
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { built } from '../cluster.js';
import { repoRoot } from '../../support/k8s-tools.js';
import { helm4Path, kubectl, kubectlJson, kubectlPath, run, waitUntil } from './cluster.js';

type Json = Record<string, any>;

export const HELM_CONTROLLER_VERSION = '1.6.2';

const fluxCrds = join(repoRoot, 'test', 'cluster', 'flux');

/** Applies the Flux CRDs helm-controller reads and waits until each is served. */
export async function applyFluxCrds(): Promise<void> {
  for (const file of (await readdir(fluxCrds)).filter((name) => name.endsWith('.yaml')).sort())
    await kubectl(['apply', '--server-side', '-f', join(fluxCrds, file)]);
  for (const resource of [
    'helmreleases.helm.toolkit.fluxcd.io',
    'externalartifacts.source.toolkit.fluxcd.io',
    'helmcharts.source.toolkit.fluxcd.io',
    'ocirepositories.source.toolkit.fluxcd.io',
  ])
    await waitUntil(
      `${resource} to be served`,
      async () => (await run(kubectlPath, ['get', resource, '-A'])).status === 0,
    );
}

/** Serves chart archives over HTTP on 127.0.0.1, as a producer of ExternalArtifacts serves its storage. */
export class ArtifactServer {
  private readonly files = new Map<string, Buffer>();
  private server: Server | undefined;
  private port = 0;

  async start(): Promise<void> {
    this.server = createServer((request, response) => {
      const body = this.files.get(request.url ?? '');
      if (body === undefined) response.writeHead(404).end();
      else response.writeHead(200, { 'Content-Type': 'application/gzip' }).end(body);
    });
    await new Promise<void>((resolve) => this.server?.listen(0, '127.0.0.1', resolve));
    this.port = (this.server.address() as AddressInfo).port;
  }

  /** Serves the archive at /PATH; its URL and digest as status.artifact names them. */
  serve(path: string, archive: Buffer): { url: string; digest: string } {
    this.files.set(`/${path}`, archive);
    return {
      url: `http://127.0.0.1:${this.port}/${path}`,
      digest: `sha256:${createHash('sha256').update(archive).digest('hex')}`,
    };
  }

  async stop(): Promise<void> {
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()));
  }
}

/** `helm package` (the real helm 4.3.2) of a chart folder; the archive's bytes. */
export async function packageChart(chartDir: string, outDir: string, env: Record<string, string>): Promise<Buffer> {
  await mkdir(outDir, { recursive: true });
  const packaged = await run(helm4Path, ['package', chartDir, '-d', outDir], { env });
  if (packaged.status !== 0) throw new Error(`helm package ${chartDir}: ${packaged.stderr}`);
  const archive = /saved it to: (\S+)/.exec(packaged.stdout)?.[1];
  if (archive === undefined) throw new Error(`helm package said: ${packaged.stdout}`);
  return readFile(archive);
}

/** Creates (or moves to a new revision) the ExternalArtifact NS/NAME pointing at an archive the server serves. */
export async function publishArtifact(
  server: ArtifactServer,
  ns: string,
  name: string,
  archive: Buffer,
  revision: string,
): Promise<void> {
  const path = `${ns}/${name}-${revision}.tgz`;
  const { url, digest } = server.serve(path, archive);
  await kubectl(
    ['apply', '-f', '-'],
    JSON.stringify({
      apiVersion: 'source.toolkit.fluxcd.io/v1',
      kind: 'ExternalArtifact',
      metadata: { name, namespace: ns },
      spec: {},
    }),
  );
  await kubectl([
    'patch',
    'externalartifact',
    name,
    '-n',
    ns,
    '--subresource=status',
    '--type=merge',
    '-p',
    JSON.stringify({
      status: {
        artifact: {
          path,
          url,
          digest,
          revision,
          size: archive.length,
          lastUpdateTime: new Date().toISOString().replace(/\.\d+Z$/, 'Z'),
        },
      },
    }),
  ]);
}

/**
 * A kubeconfig for the ServiceAccount helm-controller of `ns`, bound to cluster-admin in `ns` and in each of
 * `deploysTo`; written into `dir`.
 */
export async function helmControllerKubeconfig(
  dir: string,
  ns: string,
  deploysTo: readonly string[] = [],
): Promise<string> {
  await kubectl(['create', 'serviceaccount', 'helm-controller', '-n', ns]);
  for (const target of [ns, ...deploysTo])
    await kubectl([
      'create',
      'rolebinding',
      'helm-controller',
      '-n',
      target,
      '--clusterrole=cluster-admin',
      `--serviceaccount=${ns}:helm-controller`,
    ]);
  const token = (await kubectl(['create', 'token', 'helm-controller', '-n', ns, '--duration=1h'])).trim();
  const admin = await kubectlJson<Json>(['config', 'view', '--raw', '--minify']);
  const path = join(dir, `helm-controller-${ns}.kubeconfig`);
  await writeFile(
    path,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: admin.clusters[0].cluster as Json }],
      users: [{ name: 'helm-controller', user: { token } }],
      contexts: [{ name: 'c', context: { cluster: 'c', user: 'helm-controller', namespace: ns } }],
      'current-context': 'c',
    }),
    { mode: 0o600 },
  );
  return path;
}

export interface HelmControllerProcess {
  /** What it wrote to stderr so far (its log, and a Go panic's trace). */
  stderr(): string;
  /** Resolves when it exits, with its exit code (2 for a Go panic) or the signal that ended it. */
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGTERM, then SIGKILL after 10 s; resolves once it has exited. */
  stop(): Promise<void>;
}

/** Starts helm-controller as the given kubeconfig's identity, watching only `ns` (as RUNTIME_NAMESPACE says). */
export function startHelmController(ns: string, kubeconfigPath: string): HelmControllerProcess {
  const binary = join(built(['helm-controller'])['helm-controller'], 'helm-controller');
  const child: ChildProcess = spawn(
    binary,
    [
      '--watch-all-namespaces=false',
      '--feature-gates=ExternalArtifact=true',
      // Metrics and probes off: processes of cases side by side would fight over :8080 and :9440.
      '--metrics-addr=0',
      '--health-addr=0',
      '--log-encoding=console',
      '--requeue-dependency=5s',
    ],
    {
      env: {
        PATH: process.env.PATH ?? '',
        HOME: process.env.HOME ?? '/root',
        KUBECONFIG: kubeconfigPath,
        RUNTIME_NAMESPACE: ns,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    },
  );
  let stderr = '';
  child.stderr?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  child.stdout?.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) =>
    child.on('exit', (code, signal) => resolve({ code, signal })),
  );
  return {
    stderr: () => stderr,
    exited,
    async stop() {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      await exited;
      clearTimeout(timer);
    },
  };
}
