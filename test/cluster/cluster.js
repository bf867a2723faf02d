#!/usr/bin/env node
// A real Kubernetes control plane on 127.0.0.1 for hookguard's cluster tests (docs/testing.md, "The real control
// plane"): etcd, kube-apiserver, kube-controller-manager and kube-scheduler of Kubernetes v1.37.2, built from their Go
// modules under test/cluster/tools/, the kubelet simulator of the same module on two fake Nodes, and hookguard from
// this checkout with the objects its chart renders, as its ServiceAccount. The kubectl and both Helms it builds are
// also the ones the other slow tests run (test/support/k8s-tools.ts).
//
//   node test/cluster/cluster.js up               build what is missing, start what is not running, wait until ready
//   node test/cluster/cluster.js down             stop every process it started (by pid) and remove its state
//   node test/cluster/cluster.js build [TOOL...]  only build the binaries (of the named TOOLS) into the cache, and
//                                                 print each one's folder (NAME<tab>FOLDER)
//
// Settings (environment): HOOKGUARD_CLUSTER_MODE=enforce|audit (default enforce), HOOKGUARD_CLUSTER_SERVE_ARGS (more
// `hookguard serve` flags, split on spaces), HOOKGUARD_CLUSTER_CACHE (default ~/.cache/hookguard-cluster).
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import {
  closeSync,
  existsSync,
  mkdirSync,
  openSync,
  readFileSync,
  readdirSync,
  readlinkSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { request as httpsRequest } from 'node:https';
import { createServer } from 'node:net';
import { homedir } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
export const repoRoot = resolve(here, '..', '..');
export const clusterDir = join(repoRoot, '.cluster');
const toolsDir = join(here, 'tools');
const stateFile = join(clusterDir, 'state.json');
const logsDir = join(clusterDir, 'logs');
const pkiDir = join(clusterDir, 'pki');
export const kubeconfigPath = join(clusterDir, 'kubeconfig');

export const KUBERNETES_VERSION = 'v1.37.2';
export const HOOKGUARD_NAMESPACE = 'hookguard';
export const AUDIT_NAMESPACE_LABEL = 'hookguard.test/audit';
const NODE_COUNT = 2;

/** The Argo CD releases whose sync engine argo-sync carries (test/cluster/tools/argo-sync). */
const ARGO_SYNC_ENGINES = ['2.14.3', '2.14.21', '3.0.0', '3.1.16', '3.2.12'];

/**
 * What is built, from which module under test/cluster/tools/, with which version stamped in; `buildMinutes`, what its
 * first build took on a quiet 2-core machine with empty caches (2026-12-07, docs/testing.md), said when it starts.
 */
const TOOLS = [
  {
    name: 'kubernetes',
    version: KUBERNETES_VERSION,
    buildMinutes: 12,
    packages: [
      'k8s.io/kubernetes/cmd/kube-apiserver',
      'k8s.io/kubernetes/cmd/kube-controller-manager',
      'k8s.io/kubernetes/cmd/kube-scheduler',
      'k8s.io/kubernetes/cmd/kubectl',
      './cmd/kubelet-sim',
    ],
    // As hack/lib/version.sh (kube::version::ldflags) stamps a release: /version then says v1.37.2, which Helm's
    // kubeVersion checks and hookguard's discovery read.
    ldflags: ['k8s.io/component-base/version', 'k8s.io/client-go/pkg/version'].flatMap((pkg) => [
      `-X ${pkg}.gitVersion=${KUBERNETES_VERSION}`,
      `-X ${pkg}.gitMajor=1`,
      `-X ${pkg}.gitMinor=37`,
      `-X ${pkg}.gitTreeState=clean`,
      `-X ${pkg}.buildDate=2026-11-01T00:00:00Z`,
    ]),
    tags: 'selinux,notest,grpcnotrace',
  },
  {
    name: 'etcd',
    version: 'v3.6.16',
    buildMinutes: 1,
    packages: ['go.etcd.io/etcd/server/v3'],
    output: 'etcd',
    ldflags: [],
  },
  {
    name: 'helm4',
    version: 'v4.3.2',
    buildMinutes: 3,
    packages: ['helm.sh/helm/v4/cmd/helm'],
    output: 'helm',
    // helm's Makefile stamps these (internal/version in v4, pkg/version in v3).
    ldflags: [
      '-X helm.sh/helm/v4/internal/version.version=v4.3.2',
      '-X helm.sh/helm/v4/internal/version.gitTreeState=clean',
    ],
  },
  // The CEL cost kube-apiserver counts for `hookguard policies`, measured with k8s.io/apiserver v0.37.2's own compiler
  // and evaluators (test/cluster/policies.test.ts).
  { name: 'celcost', version: 'v0.37.2', buildMinutes: 3, packages: ['.'], output: 'celcost', ldflags: [] },
  {
    name: 'argo-sync',
    // One build per Argo CD release whose gitops-engine the seeds need (a Go module holds one version of the engine):
    // the same main.go with that release's pins, from go.argocd-VERSION.mod (go.mod is v3.0.0's). docs/testing.md says
    // why these and what the module proxy refused.
    version: ARGO_SYNC_ENGINES.join('+'),
    buildMinutes: 11,
    builds: ARGO_SYNC_ENGINES.map((argocd) => ({
      output: `argo-sync-${argocd}`,
      modfile: argocd === '3.0.0' ? undefined : `go.argocd-${argocd}.mod`,
      ldflags: [`-X main.engineArgoCD=${argocd}`],
    })),
    packages: ['.'],
    ldflags: [],
  },
  // Flux's helm-controller, which flux.test.ts starts itself (cluster:up builds it, never starts it). No version
  // ldflags: its Dockerfile builds main.go with none. v1.6.2: v1.6.3's Helm fork is refused by the module proxy
  // (tools/helm-controller/go.mod).
  {
    name: 'helm-controller',
    version: 'v1.6.2',
    buildMinutes: 5,
    packages: ['github.com/fluxcd/helm-controller'],
    output: 'helm-controller',
    ldflags: [],
  },
  {
    name: 'helm3',
    version: 'v3.21.4',
    buildMinutes: 2,
    packages: ['helm.sh/helm/v3/cmd/helm'],
    output: 'helm',
    // helm v3.21.4's Makefile also stamps the Kubernetes version of its client-go (v0.36.2) as the default
    // .Capabilities.KubeVersion of `helm template` and `helm lint`.
    ldflags: [
      '-X helm.sh/helm/v3/internal/version.version=v3.21.4',
      '-X helm.sh/helm/v3/internal/version.gitTreeState=clean',
      ...['pkg/lint/rules', 'pkg/chartutil'].flatMap((pkg) => [
        `-X helm.sh/helm/v3/${pkg}.k8sVersionMajor=1`,
        `-X helm.sh/helm/v3/${pkg}.k8sVersionMinor=36`,
      ]),
    ],
  },
];

function cacheRoot() {
  return process.env.HOOKGUARD_CLUSTER_CACHE || join(homedir(), '.cache', 'hookguard-cluster');
}

/** The cache folder of one tool: its name, version and a digest of its module's files, so an edit rebuilds it. */
function cacheDirOf(tool) {
  const hash = createHash('sha256');
  const moduleDir = join(toolsDir, tool.name);
  for (const file of readdirSync(moduleDir, { recursive: true }).sort()) {
    const path = join(moduleDir, file);
    if (statSync(path).isFile()) hash.update(file).update(readFileSync(path));
  }
  hash.update(JSON.stringify([tool.packages, tool.ldflags, tool.tags]));
  if (tool.builds) hash.update(JSON.stringify(tool.builds));
  return join(cacheRoot(), `${tool.name}-${tool.version}-${hash.digest('hex').slice(0, 12)}`);
}

function say(message) {
  process.stderr.write(`cluster: ${message}\n`);
}

/** Is there a Go to build with? */
export function goOnPath() {
  const go = spawnSync('go', ['version'], { encoding: 'utf8' });
  return !go.error && go.status === 0;
}

/** The tools of these names, failing on a name TOOLS does not have. */
function toolsNamed(names) {
  const unknown = names.filter((name) => !TOOLS.some((tool) => tool.name === name));
  if (unknown.length > 0) throw new Error(`cluster: no tool named ${unknown.join(', ')}`);
  return TOOLS.filter((tool) => names.includes(tool.name));
}

/** Every tool cluster.js builds: the cluster's own, and the oracles only the cluster tests run. */
export const ALL_TOOLS = TOOLS.map((tool) => tool.name);

/**
 * What `cluster.js up` builds and runs: the control plane, kubectl and both Helms. The cluster tests' global setup
 * builds the rest (the CEL cost meter, Argo CD's sync engines, Flux's helm-controller) before it starts the cluster:
 * a new machine's first `npm run cluster:up` does not wait for oracles it never runs.
 */
export const CLUSTER_TOOLS = ['kubernetes', 'etcd', 'helm4', 'helm3'];

/** How every go command here runs: go.sum is the lock (-mod=readonly: nothing new is resolved), and no other Go is fetched. */
const GO_ENV = { ...process.env, GOTOOLCHAIN: 'local', CGO_ENABLED: '0', GOFLAGS: '-mod=readonly' };

/** The go build of each binary of a tool: its module file (argo-sync has one per engine) and its own ldflags. */
const buildsOf = (tool) => tool.builds ?? [{ output: tool.output, ldflags: [] }];

/**
 * Starts downloading the Go modules of TOOLS, all at once, in the background: `go list -deps` of the packages a build
 * compiles fetches what it needs and nothing more. On a new machine each build would otherwise fetch its modules only
 * after the builds before it compiled (network time added to CPU time). The module cache locks each module, so a build
 * that needs one being fetched waits for it. Returns what stops those still running.
 */
function prefetchModules(tools) {
  const children = tools.flatMap((tool) =>
    buildsOf(tool).map(({ modfile }) =>
      // A fetch that cannot start or fails costs nothing but time: the build fetches what it lacks itself.
      spawn(
        'go',
        [
          'list',
          '-deps',
          ...(modfile ? [`-modfile=${modfile}`] : []),
          ...(tool.tags ? ['-tags', tool.tags] : []),
        ].concat(tool.packages),
        { cwd: join(toolsDir, tool.name), stdio: 'ignore', env: GO_ENV },
      ).on('error', () => {}),
    ),
  );
  return () => {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill();
  };
}

/**
 * Builds the named tools (all by default) that are missing from the cache; returns the folder of each one's binaries by
 * name. The modules of those after the first, and of the tools named in `alsoFetch`, are downloaded meanwhile.
 */
export function build(names = ALL_TOOLS, { alsoFetch = [] } = {}) {
  if (!goOnPath())
    throw new Error('cluster: go is not on PATH (the cluster tests build Kubernetes from its Go modules)');
  const dirs = Object.fromEntries(toolsNamed([...names, ...alsoFetch]).map((tool) => [tool.name, cacheDirOf(tool)]));
  const missing = (tool) => !isBuilt(dirs[tool.name]);
  const wanted = toolsNamed(names);
  const toBuild = wanted.filter(missing);
  const stopPrefetch = prefetchModules([...new Set([...toBuild.slice(1), ...toolsNamed(alsoFetch).filter(missing)])]);
  try {
    for (const tool of toBuild) buildInto(tool, dirs[tool.name]);
  } finally {
    stopPrefetch();
  }
  return Object.fromEntries(wanted.map((tool) => [tool.name, dirs[tool.name]]));
}

/** Builds TOOL's binaries into DIR, through a folder of its own that becomes DIR once every build is done. */
function buildInto(tool, dir) {
  const started = Date.now();
  say(`building ${tool.name} ${tool.version} into ${dir} (first time only: about ${tool.buildMinutes} min on 2 cores)`);
  const partial = `${dir}.partial-${process.pid}`;
  rmSync(partial, { recursive: true, force: true });
  mkdirSync(partial, { recursive: true });
  for (const { output, modfile, ldflags } of buildsOf(tool)) {
    const out = output && tool.packages.length === 1 ? join(partial, output) : `${partial}/`;
    const args = ['build', '-trimpath', '-ldflags', ['-s', '-w', ...tool.ldflags, ...ldflags].join(' '), '-o', out];
    if (modfile) args.push(`-modfile=${modfile}`);
    if (tool.tags) args.push('-tags', tool.tags);
    const result = spawnSync('go', [...args, ...tool.packages], {
      cwd: join(toolsDir, tool.name),
      stdio: ['ignore', 'inherit', 'inherit'],
      env: GO_ENV,
    });
    if (result.status !== 0)
      throw new Error(`cluster: go build of ${tool.name} ${output ?? ''} failed (exit ${result.status})`);
  }
  writeFileSync(
    join(partial, '.complete'),
    `${new Date().toISOString()} ${Math.round((Date.now() - started) / 1000)} s\n`,
  );
  rmSync(dir, { recursive: true, force: true });
  renameSync(partial, dir);
  say(`built ${tool.name} in ${Math.round((Date.now() - started) / 1000)} s`);
}

/**
 * The folder of each named tool's binaries, built before (build() here, or `node test/cluster/cluster.js build`): it
 * never builds, so processes running side by side (vitest's workers) only look, one build having run before them.
 */
export function built(names) {
  const dirs = builtSoFar(names);
  const missing = toolsNamed(names).find((tool) => dirs[tool.name] === undefined);
  if (missing)
    throw new Error(
      `cluster: ${missing.name} ${missing.version} is not built in ${cacheDirOf(missing)} (node test/cluster/cluster.js build ${missing.name} builds it, with Go)`,
    );
  return dirs;
}

/** The folder of each named tool that is built; the others are left out. */
function builtSoFar(names) {
  return Object.fromEntries(
    toolsNamed(names)
      .map((tool) => [tool.name, cacheDirOf(tool)])
      .filter(([, dir]) => isBuilt(dir)),
  );
}

/** Whether a tool's cache folder holds a whole build: buildInto() writes `.complete` last. */
function isBuilt(dir) {
  return existsSync(join(dir, '.complete'));
}

function readState() {
  try {
    return JSON.parse(readFileSync(stateFile, 'utf8'));
  } catch {
    return undefined;
  }
}

function writeState(state) {
  writeFileSync(stateFile, `${JSON.stringify(state, null, 2)}\n`);
}

function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

function freePort() {
  return new Promise((resolvePort, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address();
      server.close(() => resolvePort(port));
    });
  });
}

function tail(path, lines = 40) {
  try {
    return readFileSync(path, 'utf8').split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/** Starts one component in the background, its output in .cluster/logs/NAME.log, and records its pid. */
function start(state, name, command, args, env = {}) {
  const log = join(logsDir, `${name}.log`);
  const fd = openSync(log, 'a');
  const child = spawn(command, args, {
    cwd: clusterDir,
    detached: true,
    stdio: ['ignore', fd, fd],
    env: { ...process.env, ...env },
  });
  closeSync(fd);
  child.unref();
  state.pids[name] = child.pid;
  writeState(state);
  return { name, log, pid: child.pid };
}

function failure(component, why) {
  return new Error(`cluster: ${component.name} ${why}; the tail of ${component.log}:\n${tail(component.log)}`);
}

/** Waits for check() to resolve true, failing with the component's log tail if it exits or the time runs out. */
async function waitFor(component, what, check, seconds = 60) {
  const deadline = Date.now() + seconds * 1000;
  let last = '';
  for (;;) {
    if (component.pid !== undefined && !alive(component.pid)) throw failure(component, `exited while ${what}`);
    try {
      if (await check()) return;
    } catch (error) {
      last = error instanceof Error ? error.message : String(error);
    }
    if (Date.now() > deadline)
      throw failure(component, `was not ${what} after ${seconds} s${last ? ` (${last})` : ''}`);
    await new Promise((r) => setTimeout(r, 250));
  }
}

function openssl(...args) {
  execFileSync('openssl', args, { cwd: pkiDir, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** The cluster's CA, the API server's serving pair, an admin client pair and the ServiceAccount signing key. */
function makePki() {
  mkdirSync(pkiDir, { recursive: true });
  if (existsSync(join(pkiDir, 'sa.pub'))) return;
  openssl(
    'req',
    '-x509',
    '-newkey',
    'rsa:2048',
    '-nodes',
    '-keyout',
    'ca.key',
    '-out',
    'ca.crt',
    '-days',
    '3650',
    '-subj',
    '/CN=hookguard-test-ca',
  );
  const sign = (name, subject, extensions) => {
    openssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subject);
    writeFileSync(join(pkiDir, `${name}.ext`), extensions);
    openssl(
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-days',
      '3650',
      '-extfile',
      `${name}.ext`,
      '-out',
      `${name}.crt`,
    );
  };
  sign(
    'apiserver',
    '/CN=kube-apiserver',
    'subjectAltName=IP:127.0.0.1,DNS:localhost,IP:10.96.0.1,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc\nextendedKeyUsage=serverAuth\n',
  );
  sign('admin', '/O=system:masters/CN=admin', 'extendedKeyUsage=clientAuth\n');
  sign(
    'apiserver-kubelet-client',
    '/O=system:masters/CN=kube-apiserver-kubelet-client',
    'extendedKeyUsage=clientAuth\n',
  );
  openssl('genrsa', '-out', 'sa.key', '2048');
  openssl('rsa', '-in', 'sa.key', '-pubout', '-out', 'sa.pub');
}

function kubeconfigText(server, user) {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: hookguard-test',
    '  cluster:',
    `    server: ${server}`,
    `    certificate-authority: ${join(pkiDir, 'ca.crt')}`,
    'users:',
    `- name: ${user.name}`,
    '  user:',
    ...Object.entries(user.fields).map(([key, value]) => `    ${key}: ${value}`),
    'contexts:',
    '- name: hookguard-test',
    '  context:',
    '    cluster: hookguard-test',
    `    user: ${user.name}`,
    'current-context: hookguard-test',
    '',
  ].join('\n');
}

/** GET a path of the API server as the admin; resolves with the status and body. */
export function apiGet(state, path) {
  return new Promise((resolveGet, reject) => {
    const req = httpsRequest(
      {
        host: '127.0.0.1',
        port: state.ports.apiserver,
        path,
        ca: readFileSync(join(pkiDir, 'ca.crt')),
        cert: readFileSync(join(pkiDir, 'admin.crt')),
        key: readFileSync(join(pkiDir, 'admin.key')),
        timeout: 5000,
      },
      (res) => {
        let body = '';
        res.setEncoding('utf8');
        res.on('data', (chunk) => (body += chunk));
        res.on('end', () => resolveGet({ status: res.statusCode, body }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', reject);
    req.end();
  });
}

function httpGet(url) {
  return fetch(url, { signal: AbortSignal.timeout(5000) });
}

export function kubectlPath(dirs) {
  return join(dirs.kubernetes, 'kubectl');
}

function kubectl(dirs, args, input) {
  return execFileSync(kubectlPath(dirs), ['--kubeconfig', kubeconfigPath, ...args], {
    encoding: 'utf8',
    input,
    stdio: ['pipe', 'pipe', 'pipe'],
    maxBuffer: 64 * 1024 * 1024,
  });
}

async function startControlPlane(dirs, state) {
  const bin = (tool, name) => join(dirs[tool], name);
  const etcd = start(state, 'etcd', bin('etcd', 'etcd'), [
    '--name=default',
    `--data-dir=${join(clusterDir, 'etcd')}`,
    '--unsafe-no-fsync',
    `--listen-client-urls=http://127.0.0.1:${state.ports.etcd}`,
    `--advertise-client-urls=http://127.0.0.1:${state.ports.etcd}`,
    `--listen-peer-urls=http://127.0.0.1:${state.ports.etcdPeer}`,
    `--initial-advertise-peer-urls=http://127.0.0.1:${state.ports.etcdPeer}`,
    `--initial-cluster=default=http://127.0.0.1:${state.ports.etcdPeer}`,
    '--log-level=warn',
  ]);
  await waitFor(etcd, 'healthy', async () => (await httpGet(`http://127.0.0.1:${state.ports.etcd}/health`)).ok);

  const pki = (name) => join(pkiDir, name);
  const apiserver = start(state, 'kube-apiserver', bin('kubernetes', 'kube-apiserver'), [
    `--etcd-servers=http://127.0.0.1:${state.ports.etcd}`,
    '--bind-address=127.0.0.1',
    `--secure-port=${state.ports.apiserver}`,
    '--advertise-address=127.0.0.1',
    // k/k v1.37 refuses a loopback --advertise-address with the lease endpoint reconciler.
    '--endpoint-reconciler-type=none',
    `--tls-cert-file=${pki('apiserver.crt')}`,
    `--tls-private-key-file=${pki('apiserver.key')}`,
    `--client-ca-file=${pki('ca.crt')}`,
    `--kubelet-client-certificate=${pki('apiserver-kubelet-client.crt')}`,
    `--kubelet-client-key=${pki('apiserver-kubelet-client.key')}`,
    '--kubelet-preferred-address-types=InternalIP',
    '--authorization-mode=RBAC',
    '--service-account-issuer=https://kubernetes.default.svc.cluster.local',
    `--service-account-key-file=${pki('sa.pub')}`,
    `--service-account-signing-key-file=${pki('sa.key')}`,
    '--service-cluster-ip-range=10.96.0.0/16',
    '--allow-privileged=true',
    '--profiling=false',
    '--v=1',
  ]);
  await waitFor(apiserver, 'ready', async () => (await apiGet(state, '/readyz')).status === 200, 120);

  const admin = kubeconfigPath;
  const controllerManager = start(state, 'kube-controller-manager', bin('kubernetes', 'kube-controller-manager'), [
    `--kubeconfig=${admin}`,
    `--authentication-kubeconfig=${admin}`,
    `--authorization-kubeconfig=${admin}`,
    '--bind-address=127.0.0.1',
    `--secure-port=${state.ports.controllerManager}`,
    '--leader-elect=false',
    `--service-account-private-key-file=${pki('sa.key')}`,
    `--root-ca-file=${pki('ca.crt')}`,
    '--controllers=job-controller,cronjob-controller,ttl-after-finished-controller,garbage-collector-controller,namespace-controller,serviceaccount-controller,serviceaccount-token-controller,resourcequota-controller,root-ca-certificate-publisher-controller,clusterrole-aggregation-controller,pod-garbage-collector-controller,replicaset-controller,deployment-controller,validatingadmissionpolicy-status-controller',
    '--v=1',
  ]);
  const scheduler = start(state, 'kube-scheduler', bin('kubernetes', 'kube-scheduler'), [
    `--kubeconfig=${admin}`,
    `--authentication-kubeconfig=${admin}`,
    `--authorization-kubeconfig=${admin}`,
    '--bind-address=127.0.0.1',
    `--secure-port=${state.ports.scheduler}`,
    '--leader-elect=false',
    '--v=1',
  ]);
  const simulator = start(state, 'kubelet-sim', bin('kubernetes', 'kubelet-sim'), [
    `--kubeconfig=${admin}`,
    `--nodes=${NODE_COUNT}`,
    `--port=${state.ports.kubelet}`,
  ]);
  // The ServiceAccount controller makes `default` in every namespace: the controller manager is at work.
  await waitFor(controllerManager, 'making ServiceAccounts', async () => {
    kubectl(dirs, ['get', 'serviceaccount', 'default', '-n', 'default']);
    return true;
  });
  await waitFor(simulator, 'registering its Nodes', async () => {
    const nodes = JSON.parse(kubectl(dirs, ['get', 'nodes', '-o', 'json'])).items;
    return (
      nodes.filter(
        (node) =>
          node.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') && !node.spec?.taints?.length,
      ).length === NODE_COUNT
    );
  });
  return { scheduler };
}

/** hookguard's chart rendered as `helm install` would, with the settings of this cluster. */
function renderChart(dirs, mode) {
  return execFileSync(
    join(dirs.helm4, 'helm'),
    [
      'template',
      'hookguard',
      join(repoRoot, 'charts', 'hookguard'),
      '--namespace',
      HOOKGUARD_NAMESPACE,
      '--set',
      `mode=${mode}`,
      // Namespaces labelled hookguard.test/audit are out of this hookguard's reach: left to the audit-mode hookguard a
      // test runs beside it (fixtures.test.ts, value true) or to the admission policies alone (policies.test.ts).
      '--set',
      `webhook.namespaceSelector.matchExpressions[0].key=${AUDIT_NAMESPACE_LABEL}`,
      '--set',
      'webhook.namespaceSelector.matchExpressions[0].operator=DoesNotExist',
      '--kube-version',
      KUBERNETES_VERSION.slice(1),
    ],
    { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
  );
}

async function startHookguard(dirs, state) {
  const { parse, parseAllDocuments, stringify } = await import('yaml');
  const mode = process.env.HOOKGUARD_CLUSTER_MODE || 'enforce';
  if (mode !== 'enforce' && mode !== 'audit')
    throw new Error(`cluster: HOOKGUARD_CLUSTER_MODE must be enforce or audit, not ${mode}`);
  const documents = parseAllDocuments(renderChart(dirs, mode))
    .map((document) => document.toJS())
    .filter((object) => object && typeof object === 'object');
  // The chart's hooks (its CRD upgrade Job, the helm test) are Helm's to run; the Deployment is replaced by the
  // process below, since no container runs here.
  const installed = documents.filter(
    (object) => !object.metadata?.annotations?.['helm.sh/hook'] && object.kind !== 'Deployment',
  );
  const config = installed.find((object) => object.kind === 'ConfigMap' && object.metadata.name === 'hookguard-config');
  // The Secret re-read every 5 s, not the default 30 (the chart fixes the certificates keys, so it is set here): a new
  // CA reaches the serving certificate after two refreshes and a request timeout (src/controllers/certificates/
  // keeper.ts), 16 s instead of 71 s in operations.test.ts; the logic is the same at any interval.
  const settings = parse(config.data['config.yaml']);
  settings.certificates = { ...settings.certificates, refreshIntervalMs: 5000 };
  config.data['config.yaml'] = stringify(settings);
  const port = state.ports.hookguard;
  for (const object of installed) {
    // The Service reaches the process on this machine: an ExternalName Service resolves to localhost (k8s.io/apiserver
    // v0.37.2 pkg/util/proxy/proxy.go ResolveCluster), and the TLS server name stays hookguard.hookguard.svc.
    if (object.kind === 'Service' && object.metadata.name === 'hookguard') {
      object.spec = { type: 'ExternalName', externalName: 'localhost', ports: [{ name: 'https', port }] };
    }
    if (object.kind === 'MutatingWebhookConfiguration' || object.kind === 'ValidatingWebhookConfiguration') {
      for (const webhook of object.webhooks) webhook.clientConfig.service.port = port;
    }
  }
  const crds = readdirSync(join(repoRoot, 'charts', 'hookguard', 'crds')).map((name) =>
    join(repoRoot, 'charts', 'hookguard', 'crds', name),
  );
  // As `helm install --create-namespace` would.
  kubectl(dirs, ['create', 'namespace', HOOKGUARD_NAMESPACE]);
  for (const crd of crds) kubectl(dirs, ['apply', '--server-side', '-f', crd]);
  kubectl(dirs, ['wait', '--for=condition=Established', '--timeout=60s', 'crd', '--all']);
  kubectl(
    dirs,
    ['apply', '--server-side', '--force-conflicts', '-f', '-'],
    installed.map((object) => stringify(object)).join('---\n'),
  );

  // hookguard runs as its ServiceAccount, with a token from the TokenRequest API: the chart's RBAC is all it has.
  const token = kubectl(dirs, ['create', 'token', 'hookguard', '-n', HOOKGUARD_NAMESPACE, '--duration=48h']).trim();
  const hookguardDir = join(clusterDir, 'hookguard');
  mkdirSync(hookguardDir, { recursive: true });
  const serverUrl = `https://127.0.0.1:${state.ports.apiserver}`;
  writeFileSync(join(hookguardDir, 'kubeconfig'), kubeconfigText(serverUrl, { name: 'hookguard', fields: { token } }), {
    mode: 0o600,
  });
  writeFileSync(join(hookguardDir, 'config.yaml'), config.data['config.yaml']);
  const extra = (process.env.HOOKGUARD_CLUSTER_SERVE_ARGS || '').split(/\s+/).filter(Boolean);
  const hookguard = start(
    state,
    'hookguard',
    process.execPath,
    [join(repoRoot, 'dist', 'cli', 'main.js'), 'serve', ...extra],
    {
      KUBECONFIG: join(hookguardDir, 'kubeconfig'),
      HOOKGUARD_CONFIG: join(hookguardDir, 'config.yaml'),
      HOOKGUARD_HOST: '127.0.0.1',
      HOOKGUARD_PORT: String(port),
      HOOKGUARD_PROBE_PORT: String(state.ports.hookguardProbe),
    },
  );
  await waitFor(
    hookguard,
    'ready',
    async () => (await httpGet(`http://127.0.0.1:${state.ports.hookguardProbe}/readyz`)).status === 200,
    90,
  );
  // Ready once the keeper has written the caBundle both webhooks are called with.
  await waitFor(hookguard, 'writing the caBundle of its webhooks', async () => {
    const bundles = ['mutatingwebhookconfiguration', 'validatingwebhookconfiguration'].map((kind) =>
      kubectl(dirs, ['get', kind, 'hookguard', '-o', 'jsonpath={.webhooks[0].clientConfig.caBundle}']),
    );
    return bundles.every((bundle) => bundle.length > 0);
  });
  state.hookguard = { mode, serveArgs: extra };
  writeState(state);
}

function ensureBuilt() {
  // hookguard serve runs from dist/: build it when it is older than src/ (the cluster tests' global setup does too).
  if (!existsSync(join(repoRoot, 'dist', 'cli', 'main.js')) || process.env.HOOKGUARD_CLUSTER_BUILD === 'always') {
    execFileSync('npm', ['run', 'build'], { cwd: repoRoot, stdio: 'inherit' });
  }
}

/** Links the cluster's binaries into .cluster/bin (`clusterDirs`: CLUSTER_TOOLS'), and the test oracles built so far. */
function linkBinaries(clusterDirs) {
  const binDir = join(clusterDir, 'bin');
  mkdirSync(binDir, { recursive: true });
  const dirs = { ...clusterDirs, ...builtSoFar(ALL_TOOLS.filter((name) => !CLUSTER_TOOLS.includes(name))) };
  const links = {
    kubectl: join(dirs.kubernetes, 'kubectl'),
    helm: join(dirs.helm4, 'helm'),
    helm3: join(dirs.helm3, 'helm'),
    etcd: join(dirs.etcd, 'etcd'),
    'kube-apiserver': join(dirs.kubernetes, 'kube-apiserver'),
    'kube-controller-manager': join(dirs.kubernetes, 'kube-controller-manager'),
    'kube-scheduler': join(dirs.kubernetes, 'kube-scheduler'),
    'kubelet-sim': join(dirs.kubernetes, 'kubelet-sim'),
  };
  if (dirs.celcost) links.celcost = join(dirs.celcost, 'celcost');
  // argo-sync runs its siblings for the other engines: they sit in the same cache folder, linked here too.
  if (dirs['argo-sync']) {
    links['argo-sync'] = join(dirs['argo-sync'], `argo-sync-${ARGO_SYNC_ENGINES.at(-1)}`);
    for (const argocd of ARGO_SYNC_ENGINES)
      links[`argo-sync-${argocd}`] = join(dirs['argo-sync'], `argo-sync-${argocd}`);
  }
  // Link by link, never the folder at once: tests of a running cluster may be running these binaries meanwhile.
  for (const [name, target] of Object.entries(links)) {
    const link = join(binDir, name);
    if (linkTarget(link) === target) continue;
    rmSync(link, { force: true });
    symlinkSync(target, link);
  }
}

function linkTarget(path) {
  try {
    return readlinkSync(path);
  } catch {
    return undefined;
  }
}

/** Is the cluster of the state file still whole (every process alive, the API server ready)? */
async function running(state) {
  if (!state || !state.ready) return false;
  if (!Object.values(state.pids).every(alive)) return false;
  try {
    return (await apiGet(state, '/readyz')).status === 200;
  } catch {
    return false;
  }
}

export async function up() {
  const started = Date.now();
  const existing = readState();
  if (await running(existing)) {
    // The oracles the tests built since it started are linked beside the rest.
    linkBinaries(existing.dirs);
    say(`already running (${kubeconfigPath})`);
    return existing;
  }
  if (existing) await down();
  const dirs = build(CLUSTER_TOOLS);
  ensureBuilt();
  mkdirSync(logsDir, { recursive: true });
  makePki();
  const ports = {};
  for (const name of [
    'etcd',
    'etcdPeer',
    'apiserver',
    'controllerManager',
    'scheduler',
    'kubelet',
    'hookguard',
    'hookguardProbe',
  ]) {
    ports[name] = await freePort();
  }
  const state = { ports, pids: {}, dirs, ready: false };
  writeState(state);
  writeFileSync(
    kubeconfigPath,
    kubeconfigText(`https://127.0.0.1:${ports.apiserver}`, {
      name: 'admin',
      fields: { 'client-certificate': join(pkiDir, 'admin.crt'), 'client-key': join(pkiDir, 'admin.key') },
    }),
    { mode: 0o600 },
  );
  linkBinaries(dirs);
  try {
    await startControlPlane(dirs, state);
    await startHookguard(dirs, state);
  } catch (error) {
    await down();
    throw error;
  }
  state.ready = true;
  writeState(state);
  say(`ready in ${Math.round((Date.now() - started) / 1000)} s; logs in ${logsDir}`);
  return state;
}

export async function down() {
  const state = readState();
  if (state) {
    const pids = Object.values(state.pids).reverse();
    for (const pid of pids) if (alive(pid)) process.kill(pid, 'SIGTERM');
    const deadline = Date.now() + 10_000;
    while (pids.some(alive) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    for (const pid of pids) if (alive(pid)) process.kill(pid, 'SIGKILL');
  }
  rmSync(clusterDir, { recursive: true, force: true });
}

/** The state of a running cluster: its ports, pids and binary folders. */
export function state() {
  return readState();
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const command = process.argv[2];
  const names = process.argv.slice(3);
  const run = { up, down, build: async () => build(names.length > 0 ? names : undefined) }[command];
  if (!run) {
    process.stderr.write(`usage: node test/cluster/cluster.js up|down|build [${ALL_TOOLS.join('|')}...]\n`);
    process.exit(2);
  }
  run().then(
    (result) => {
      if (command === 'up')
        process.stdout.write(`export KUBECONFIG=${kubeconfigPath}\nexport PATH=${join(clusterDir, 'bin')}:$PATH\n`);
      // Each tool's folder, so a shell can put one on its PATH (docs/render-time.md).
      if (command === 'build')
        for (const [name, dir] of Object.entries(result)) process.stdout.write(`${name}\t${dir}\n`);
    },
    (error) => {
      process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
      process.exit(1);
    },
  );
}
