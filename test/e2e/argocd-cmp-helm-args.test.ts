/**
 * The Argo CD plugin's HELM_ARGS (an Application's plugin env, so a tenant's) against the real helm 4.3.2 and helm
 * 3.21.4 (test/support/k8s-tools.ts), in the plugin's real bash: manifests/argocd-cmp/plugin.yaml's generate command,
 * run as argocd-cmp-server runs it (exec'd, in the Application's folder, with the environment the repo-server gives
 * it).
 *
 * Each refused case is first run against helm itself, to show it is a real attack there (a command run, an outside
 * file read, a URL fetched from a local server); through the plugin, the render stops with a message naming the flag,
 * before helm starts: the helm on PATH is a wrapper that records every start, and records none.
 */
import { execFile } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { cliPath } from '../support/cli.js';
import { helm3, helmAndKubectl, repoRoot } from '../support/k8s-tools.js';

const CMP_PLUGIN = join(repoRoot, 'manifests', 'argocd-cmp', 'plugin.yaml');
const ALLOWED =
  '(allowed: --set, --set-string, --set-json, --set-literal, -f/--values, -n/--namespace, --version, --kube-version, -a/--api-versions, --include-crds, --skip-crds, --skip-tests, --is-upgrade)';
const OUTSIDE_SECRET = 'outside-secret-4f1c';
const URL_SECRET = 'url-secret-9b2e';

interface Run {
  status: number | null;
  stdout: string;
  stderr: string;
}

/** Runs a program without blocking this process's event loop (the local HTTP server must answer helm meanwhile). */
function run(
  file: string,
  args: readonly string[],
  options: { cwd?: string; env: Record<string, string> },
): Promise<Run> {
  return new Promise((resolve) => {
    execFile(file, args, { ...options, encoding: 'utf8', timeout: 60_000 }, (error, stdout, stderr) => {
      const status = error ? (typeof error.code === 'number' ? error.code : null) : 0;
      resolve({ status, stdout, stderr });
    });
  });
}

let root: string;
let app: string;
let server: Server;
let urlRequests = 0;
let imds: string;

beforeAll(async () => {
  root = realpathSync(mkdtempSync(join(tmpdir(), 'hookguard-helm-args-')));
  // The Application's folder: a chart printing every value it was given, a values file, a link to it inside the
  // folder, and a link leading out of it.
  app = join(root, 'repo', 'apps', 'tenant');
  mkdirSync(join(app, 'templates'), { recursive: true });
  mkdirSync(join(app, 'env'));
  writeFileSync(join(app, 'Chart.yaml'), 'apiVersion: v2\nname: tenant\nversion: 1.0.0\n');
  writeFileSync(
    join(app, 'templates', 'values.yaml'),
    [
      'apiVersion: v1',
      'kind: ConfigMap',
      'metadata:',
      '  name: {{ .Release.Name }}-values',
      '  namespace: {{ .Release.Namespace }}',
      'data:',
      '  values: {{ toJson .Values | quote }}',
      '  upgrade: {{ .Release.IsUpgrade | quote }}',
      '  kube: {{ .Capabilities.KubeVersion.Version | quote }}',
      '  api: {{ .Capabilities.APIVersions.Has "example.com/v1" | quote }}',
      '',
    ].join('\n'),
  );
  writeFileSync(join(app, 'values-prod.yaml'), 'env: prod\n');
  symlinkSync('../values-prod.yaml', join(app, 'env', 'prod.yaml'));
  mkdirSync(join(root, 'outside'));
  writeFileSync(join(root, 'outside', 'secret.yaml'), `stolen: ${OUTSIDE_SECRET}\n`);
  mkdirSync(join(app, 'links'));
  symlinkSync('../../../../outside/secret.yaml', join(app, 'links', 'escape.yaml'));
  // Helm loads the chart's folder following links (and says so on stderr): these are values files, not chart files.
  writeFileSync(join(app, '.helmignore'), 'env/\nlinks/\n');
  // A stand-in for an instance metadata service, on 127.0.0.1 only.
  server = createServer((_request, response) => {
    urlRequests += 1;
    response.end(`stolen: ${URL_SECRET}\n`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  imds = `http://127.0.0.1:${(server.address() as AddressInfo).port}/latest/imds.yaml`;
});

afterAll(async () => {
  await new Promise((resolve) => server?.close(resolve));
  if (root) rmSync(root, { recursive: true, force: true });
});

const generate = (
  parse(readFileSync(CMP_PLUGIN, 'utf8')) as { spec: { generate: { command: string[]; args: string[] } } }
).spec.generate;

/** Argo CD's environment for an Application's plugin commands (argo-cd v3.4.0 repository.go newEnv, getPluginEnvs). */
const ARGOCD_ENV = {
  ARGOCD_APP_NAME: 'tenant',
  ARGOCD_APP_NAMESPACE: 'team-a',
  ARGOCD_APP_SOURCE_PATH: 'apps/tenant',
  KUBE_VERSION: '1.30.0',
  KUBE_API_VERSIONS: 'v1,batch/v1',
  // The sidecar's own (its image sets it): an Application may not.
  HOOKGUARD_ARGOCD_VERSION: '3.1.0',
};

describe.each([
  ['4.3.2', async () => (await helmAndKubectl()).helm],
  ['3.21.4', helm3],
])('HELM_ARGS with the real helm %s', (version, helmBinary) => {
  let helm: string;
  let bin: string;
  let starts: string;
  let marker: string;
  let env: Record<string, string>;

  beforeAll(async () => {
    helm = await helmBinary();
    bin = join(root, `bin-${version}`);
    mkdirSync(bin);
    starts = join(root, `helm-${version}-starts.log`);
    marker = join(root, `command-ran-${version}`);
    // helm on PATH records each start, then is the real helm.
    writeFileSync(join(bin, 'helm'), `#!/bin/sh\nprintf '%s\\n' "$*" >>'${starts}'\nexec '${helm}' "$@"\n`, {
      mode: 0o755,
    });
    writeFileSync(join(bin, 'hookguard'), `#!/bin/sh\nexec '${process.execPath}' '${cliPath}' "$@"\n`, { mode: 0o755 });
    const home = join(root, `home-${version}`);
    env = {
      PATH: `${bin}:/usr/bin:/bin`,
      HOME: home,
      HELM_DATA_HOME: join(home, 'data'),
      HELM_CONFIG_HOME: join(home, 'config'),
      HELM_CACHE_HOME: join(home, 'cache'),
    };
  });

  const plugin = (helmArgs: string) =>
    run(generate.command[0]!, [...generate.command.slice(1), ...generate.args], {
      cwd: app,
      env: { ...env, ...ARGOCD_ENV, ARGOCD_ENV_HELM_ARGS: helmArgs },
    });
  /** helm template with the same words, as the plugin ran it before this check (`read -r -a`, no globbing). */
  const helmItself = (helmArgs: string) =>
    run(helm, ['template', 'tenant', '.', '--namespace', 'team-a', ...helmArgs.split(' ')], { cwd: app, env });

  const valuesOf = (stdout: string): unknown =>
    JSON.parse((parse(stdout) as { data: { values: string } }).data.values) as unknown;

  it(`is helm ${version}`, async () => {
    expect((await run(helm, ['version', '--template', '{{.Version}}'], { env })).stdout).toBe(`v${version}`);
  });

  // [what, HELM_ARGS, the message after "hookguard-helm: HELM_ARGS: "]
  const refused: [string, () => string, () => string][] = [
    [
      'a post-renderer command (Helm 3 runs it)',
      () => `--post-renderer bash --post-renderer-args -c --post-renderer-args touch\${IFS}${marker};cat`,
      () => `--post-renderer is not allowed ${ALLOWED}`,
    ],
    ['a post-renderer, --flag=value', () => `--post-renderer=bash`, () => `--post-renderer is not allowed ${ALLOWED}`],
    [
      'a file read by --set-file',
      () => `--set-file stolen=${join(root, 'outside', 'secret.yaml')}`,
      () => `--set-file is not allowed ${ALLOWED}`,
    ],
    [
      'a URL as values',
      () => `-f ${imds}`,
      () => `-f ${imds}: a URL; a values file must be in the chart's folder ${ALLOWED}`,
    ],
    [
      'a URL as values, --values=',
      () => `--values=${imds}`,
      () => `--values ${imds}: a URL; a values file must be in the chart's folder ${ALLOWED}`,
    ],
    [
      'a values file outside the folder, by absolute path',
      () => `-f ${join(root, 'outside', 'secret.yaml')}`,
      () =>
        `-f ${join(root, 'outside', 'secret.yaml')}: not a file inside the chart's folder (${join(root, 'outside', 'secret.yaml')}) ${ALLOWED}`,
    ],
    [
      'a values file outside the folder, by ../',
      () => `-f../../../outside/secret.yaml`,
      () =>
        `-f ../../../outside/secret.yaml: not a file inside the chart's folder (${join(root, 'outside', 'secret.yaml')}) ${ALLOWED}`,
    ],
    [
      'a values file in the folder that is a link out of it',
      () => `--values links/escape.yaml`,
      () =>
        `--values links/escape.yaml: not a file inside the chart's folder (${join(root, 'outside', 'secret.yaml')}) ${ALLOWED}`,
    ],
    ['values from stdin', () => `-f -`, () => `-f -: no such file in the chart's folder ${ALLOWED}`],
    [
      'a folder as values',
      () => `-f=env`,
      () => `-f env: not a file inside the chart's folder (${join(app, 'env')}) ${ALLOWED}`,
    ],
    [
      'the sidecar environment through --name-template',
      () => `--name-template {{env"HOME"}}`,
      () => `--name-template is not allowed ${ALLOWED}`,
    ],
    [
      'files written by --output-dir',
      () => `--output-dir ${join(root, 'written')}`,
      () => `--output-dir is not allowed ${ALLOWED}`,
    ],
    ['a chart repository URL', () => `--repo ${imds}`, () => `--repo is not allowed ${ALLOWED}`],
    ['DNS lookups from templates', () => `--enable-dns`, () => `--enable-dns is not allowed ${ALLOWED}`],
    ['a kubeconfig', () => `--kubeconfig /etc/hostname`, () => `--kubeconfig is not allowed ${ALLOWED}`],
    ['bundled short flags', () => `-gf values-prod.yaml`, () => `-gf is not allowed ${ALLOWED}`],
    ['another chart, as a word that is not a flag', () => `${imds}`, () => `${imds} is not a flag ${ALLOWED}`],
    ['a flag missing its value', () => `--set`, () => `--set needs a value ${ALLOWED}`],
    [
      'a value of several lines (read would have passed the first and dropped the rest)',
      () => `--set a=1\n--post-renderer=bash`,
      () => `several lines; write every argument on one line ${ALLOWED}`,
    ],
    [
      'a value given to a switch',
      () => `--include-crds=false`,
      () => `--include-crds=false: --include-crds takes no value ${ALLOWED}`,
    ],
  ];

  it.each(refused)('refuses %s: a message naming it, and helm never starts', async (_what, args, message) => {
    rmSync(starts, { force: true });
    const before = urlRequests;
    const result = await plugin(args());
    expect(result).toEqual({ status: 1, stdout: '', stderr: `hookguard-helm: HELM_ARGS: ${message()}\n` });
    expect(existsSync(starts)).toBe(false);
    expect(existsSync(marker)).toBe(false);
    expect(existsSync(join(root, 'written'))).toBe(false);
    expect(urlRequests).toBe(before);
  });

  // The same words given to helm itself: what the plugin passed on before it checked them.
  it('each attack is real against helm itself', async () => {
    const command = await helmItself(refused[0]![1]());
    if (version.startsWith('3.')) {
      expect(command.status).toBe(0);
      expect(existsSync(marker)).toBe(true);
    } else {
      // Helm 4 takes a post-renderer plugin's name, and has none called bash.
      expect(command.stderr).toContain('bash');
      expect(existsSync(marker)).toBe(false);
    }
    rmSync(marker, { force: true });
    for (const [what, args, secret] of [
      ['--set-file', `--set-file stolen=${join(root, 'outside', 'secret.yaml')}`, OUTSIDE_SECRET],
      ['-f link', '-f links/escape.yaml', OUTSIDE_SECRET],
      ['-f URL', `-f ${imds}`, URL_SECRET],
    ] as const) {
      const read = await helmItself(args);
      expect(read.status, `${what}: ${read.stderr}`).toBe(0);
      expect(read.stdout, what).toContain(secret);
    }
    expect(urlRequests).toBeGreaterThan(0);
  });

  it('passes the allowed flags on, a values file as its resolved path inside the folder', async () => {
    rmSync(starts, { force: true });
    const result = await plugin(
      [
        '--set a=1 --set-string b=2 --set-json c={"d":[1]} --set-literal e=x,y',
        '-fvalues-prod.yaml --values=env/prod.yaml -f env/prod.yaml',
        '-n team-b --version 1.0.0 --kube-version 1.31.0 -a example.com/v1 --api-versions=other.example.com/v1',
        '--include-crds --skip-crds --skip-tests --is-upgrade',
      ].join(' '),
    );
    expect([result.status, result.stderr]).toEqual([0, '']);
    const configMap = parse(result.stdout) as { metadata: { namespace: string }; data: Record<string, string> };
    expect(valuesOf(result.stdout)).toEqual({ a: 1, b: '2', c: { d: [1] }, e: 'x,y', env: 'prod' });
    expect(configMap.metadata.namespace).toBe('team-b');
    expect(configMap.data).toMatchObject({ upgrade: 'true', kube: 'v1.31.0', api: 'true' });
    const prod = join(app, 'values-prod.yaml');
    expect(readFileSync(starts, 'utf8')).toBe(
      `template tenant . --namespace team-a --include-crds --kube-version 1.30.0 --api-versions v1 --api-versions batch/v1 --set a=1 --set-string b=2 --set-json c={"d":[1]} --set-literal e=x,y -f ${prod} --values ${prod} -f ${prod} -n team-b --version 1.0.0 --kube-version 1.31.0 -a example.com/v1 --api-versions other.example.com/v1 --include-crds --skip-crds --skip-tests --is-upgrade\n`,
    );
  });

  it('takes a value ending in a line break (a YAML block scalar) as its one line', async () => {
    const result = await plugin('--set a=1\n');
    expect([result.status, result.stderr]).toEqual([0, '']);
    expect(valuesOf(result.stdout)).toEqual({ a: 1 });
  });

  it('says what -n does: it sets .Release.Namespace (the test above renders into team-b)', () => {
    const text = readFileSync(CMP_PLUGIN, 'utf8');
    expect(text).toMatch(/^# {3}-n, --namespace {8}sets \.Release\.Namespace, the namespace templates render for/m);
    expect(text).not.toMatch(/-n, --namespace[^\n]*only prints or compares/);
  });

  it('renders with no HELM_ARGS at all', async () => {
    const result = await plugin('');
    expect([result.status, result.stderr]).toEqual([0, '']);
    expect(valuesOf(result.stdout)).toEqual({});
  });
});
