// Rendering hookguard's kustomize overlays with a real kubectl, and evaluating what ships inside them (CEL match
// conditions, Argo CD's Lua health checks) with real interpreters.
import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { run as runCel } from '@bufbuild/cel';
import { LuaFactory } from 'wasmoon';
import { parseAllDocuments } from 'yaml';
import { helmAndKubectl, repoRoot } from './k8s-tools.js';

const execFileAsync = promisify(execFile);

export type Manifest = Record<string, any>;

export const OVERLAYS = ['audit', 'enforce', 'cert-manager-audit', 'cert-manager-enforce'] as const;
export type Overlay = (typeof OVERLAYS)[number];

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
  return parseAllDocuments(stdout).map((document) => {
    if (document.errors.length > 0)
      throw new Error(`kubectl kustomize ${path} printed invalid YAML: ${document.errors[0]?.message}`);
    return document.toJS() as Manifest;
  });
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
