// Rendering hookguard's Helm chart with a real helm and its kustomize folders with a real kubectl, and evaluating
// what ships inside them (CEL match conditions, Argo CD's Lua health checks) with real interpreters.
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { run as runCel } from '@bufbuild/cel';
import { LuaFactory } from 'wasmoon';
import { parseAllDocuments } from 'yaml';
import { helm3, helmAndKubectl, repoRoot } from './k8s-tools.js';

const execFileAsync = promisify(execFile);

export type Manifest = Record<string, any>;

export const CHART = join(repoRoot, 'charts', 'hookguard');
export const CHART_CRD = join(CHART, 'crds', 'hookguards.hookguard.io.yaml');

/** The one HookGuard object the chart ships (without its labels), for tests that stand in for a cluster. */
export const HOOKGUARD_OBJECT = {
  apiVersion: 'hookguard.io/v1alpha1',
  kind: 'HookGuard',
  metadata: { name: 'hookguard' },
  spec: {},
} as const;

export interface ChartRender {
  /** The release name; hookguard by default. */
  release?: string;
  /** The release namespace (`-n`); hookguard by default. */
  namespace?: string;
  /** Values, as a values file would give them. */
  values?: Record<string, unknown>;
  /** The Helm major version that renders: 4 (4.3.2, the default) or 3 (3.21.4). */
  helm?: 3 | 4;
  /** With the CRDs of crds/ (`--include-crds`). */
  includeCrds?: boolean;
  /** The Kubernetes version helm renders for (`--kube-version`); helm's own default otherwise. */
  kubeVersion?: string;
  /** The kubeconfig helm may reach a cluster with; none by default (a file that does not exist). */
  kubeconfig?: string;
}

export const helmBinary = async (major: 3 | 4 = 4): Promise<string> =>
  major === 3 ? helm3() : (await helmAndKubectl()).helm;

/** What `helm template` printed on stdout and stderr, and its exit status. */
export function helmTemplate(options: ChartRender = {}): Promise<{ status: number; stdout: string; stderr: string }> {
  const flags = [
    ...(options.includeCrds ? ['--include-crds'] : []),
    ...(options.kubeVersion ? ['--kube-version', options.kubeVersion] : []),
  ];
  return helmOnChart('template', options, flags);
}

/** What `helm install --dry-run=client` printed (the release, its NOTES last), with FLAGS more. */
export function helmInstallDryRun(
  options: ChartRender = {},
  flags: readonly string[] = [],
): Promise<{ status: number; stdout: string; stderr: string }> {
  return helmOnChart('install', options, ['--dry-run=client', ...flags]);
}

/** `helm SUBCOMMAND RELEASE CHART -n NAMESPACE --values FILE FLAGS...`. */
async function helmOnChart(
  subcommand: string,
  options: ChartRender,
  flags: readonly string[],
): Promise<{ status: number; stdout: string; stderr: string }> {
  const dir = await mkdtemp(join(tmpdir(), 'hookguard-chart-'));
  try {
    const valuesFile = join(dir, 'values.json');
    await writeFile(valuesFile, JSON.stringify(options.values ?? {}));
    const release = options.release ?? 'hookguard';
    const args = [subcommand, release, CHART, '-n', options.namespace ?? 'hookguard', '--values', valuesFile, ...flags];
    // Helm's cache and config in a scratch home, and a kubeconfig that does not exist: nothing of the user's own helm
    // or cluster leaks in.
    const env = {
      PATH: process.env.PATH ?? '',
      HOME: dir,
      HELM_CACHE_HOME: dir,
      HELM_CONFIG_HOME: dir,
      HELM_DATA_HOME: dir,
      KUBECONFIG: options.kubeconfig ?? join(dir, 'no-kubeconfig'),
    };
    const { stdout, stderr } = await execFileAsync(await helmBinary(options.helm), args, {
      env,
      maxBuffer: 16 * 1024 * 1024,
    });
    return { status: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code?: unknown; stdout?: string; stderr?: string };
    if (typeof failed.code !== 'number') throw error;
    return { status: failed.code, stdout: failed.stdout ?? '', stderr: failed.stderr ?? '' };
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** `helm template hookguard charts/hookguard`, parsed; fails with helm's stderr when it refuses. */
export async function renderChart(options: ChartRender = {}): Promise<Manifest[]> {
  const { status, stdout, stderr } = await helmTemplate(options);
  if (status !== 0) throw new Error(`helm template failed (${status}): ${stderr}`);
  return parseManifests(stdout, 'helm template');
}

function parseManifests(text: string, what: string): Manifest[] {
  return parseAllDocuments(text).flatMap((document) => {
    if (document.errors.length > 0) throw new Error(`${what} printed invalid YAML: ${document.errors[0]?.message}`);
    const object = document.toJS() as Manifest | null;
    return object === null ? [] : [object];
  });
}

/** `kubectl kustomize manifests/<dir>`, parsed. */
export function render(dir: string): Promise<Manifest[]> {
  return renderKustomization(join('manifests', dir));
}

/** `kubectl kustomize <path>` of a folder of the repository, parsed. */
export async function renderKustomization(path: string): Promise<Manifest[]> {
  const { kubectl } = await helmAndKubectl();
  const { stdout } = await execFileAsync(kubectl, ['kustomize', join(repoRoot, path)], {
    maxBuffer: 16 * 1024 * 1024,
  });
  return parseManifests(stdout, `kubectl kustomize ${path}`);
}

export function find(objects: readonly Manifest[], kind: string, name: string): Manifest {
  const found = objects.find((object) => object.kind === kind && object.metadata?.name === name);
  if (!found)
    throw new Error(
      `no ${kind} ${name} in ${objects.map((object) => `${object.kind}/${object.metadata?.name}`).join(', ')}`,
    );
  return found;
}

/** JSON as CEL sees it in the API server: objects are maps. */
function celValue(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(celValue);
  if (value !== null && typeof value === 'object')
    return new Map(Object.entries(value).map(([key, item]) => [key, celValue(item)]));
  return value;
}

/** Evaluates a CEL expression with `object` bound, as a webhook match condition is. */
export function evaluateMatchCondition(expression: string, object: unknown): unknown {
  return evaluateCel(expression, { object });
}

/** Evaluates a CEL expression with the variables an admission policy sees (`object`, `oldObject`, `request`). */
export function evaluateCel(expression: string, variables: Record<string, unknown>): unknown {
  const bound = Object.fromEntries(Object.entries(variables).map(([name, value]) => [name, celValue(value)]));
  return runCel(expression, bound as never);
}

/** A Lua table constructor for JSON, the way Argo CD hands a resource to a health script (arrays 1-indexed). */
function luaLiteral(value: unknown): string {
  if (Array.isArray(value)) return `{${value.map(luaLiteral).join(', ')}}`;
  if (value !== null && typeof value === 'object') {
    const fields = Object.entries(value).filter(([, item]) => item !== null && item !== undefined);
    return `{${fields.map(([key, item]) => `[${JSON.stringify(key)}] = ${luaLiteral(item)}`).join(', ')}}`;
  }
  if (typeof value === 'string') return JSON.stringify(value);
  return String(value);
}

/** Runs an Argo CD health script on `object` in a real Lua VM and returns the table it returns. */
export async function runHealthCheck(script: string, object: unknown): Promise<{ status: string; message: string }> {
  const lua = await new LuaFactory().createEngine();
  try {
    return (await lua.doString(`local obj = ${luaLiteral(object)}\n${script}`)) as { status: string; message: string };
  } finally {
    lua.global.close();
  }
}
