/**
 * The real `helm` (Helm 4), Helm 3 and `kubectl` that the tests run: the ones test/cluster/cluster.js builds from
 * their pinned Go modules into its cache (helm v4.3.2, helm v3.21.4, kubectl v1.37.2), the same binaries the cluster
 * tests run. The slow tests' global setup (test/support/k8s-tools-setup.ts) builds them once, before
 * vitest starts the workers that run the test files side by side; here each worker only looks them up.
 */
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { ToolName } from '../cluster/cluster.js';

/** Repository root: the nearest folder above this file with a package.json (`<repo>/test/support/`, or the bench's compiled copy). */
export const repoRoot: string = findPackageRoot(dirname(fileURLToPath(import.meta.url)));

function findPackageRoot(start: string): string {
  for (let dir = start; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json above ${start}`);
  }
}

/** The tools of cluster.js that carry helm 4 and kubectl (`kubernetes`), and helm 3. */
export const K8S_TOOLS = ['helm4', 'kubernetes', 'helm3'] as const satisfies readonly ToolName[];

export interface K8sTools {
  helm: string;
  kubectl: string;
}

/**
 * The cache folders of built tools; rejects, naming the first one not built. cluster.js is imported only when asked:
 * the bench's compiled copy of this module, which has no cluster.js beside it, is loaded for repoRoot alone.
 */
async function builtDirs<Name extends ToolName>(names: readonly Name[]): Promise<Record<Name, string>> {
  const { built } = await import('../cluster/cluster.js');
  return built(names);
}

/** The absolute paths of the `helm` (4.3.2) and `kubectl` (1.37.2) binaries. */
export async function helmAndKubectl(): Promise<K8sTools> {
  const dirs = await builtDirs(['helm4', 'kubernetes']);
  return { helm: join(dirs.helm4, 'helm'), kubectl: join(dirs.kubernetes, 'kubectl') };
}

/** The absolute path of the Helm 3 binary (3.21.4). */
export async function helm3(): Promise<string> {
  return join((await builtDirs(['helm3'])).helm3, 'helm');
}

/**
 * The tools, or undefined with a warning so that a developer's machine without them skips the tests that need them.
 * In CI (`CI` set, as GitHub Actions, GitLab CI and most runners set it) a missing tool is an error: a run that skips
 * them would pass without testing anything.
 */
export async function toolsOrSkip<T>(
  what: string,
  get: () => Promise<T>,
  env: Readonly<Record<string, string | undefined>> = process.env,
): Promise<T | undefined> {
  try {
    return await get();
  } catch (error) {
    const why = `${what}: cannot get a helm binary: ${(error as Error).message}`;
    if (env.CI !== undefined && env.CI !== '' && env.CI !== 'false')
      throw new Error(`${why} (CI is set: not skipping)`, { cause: error });
    console.warn(`${why}; skipping`);
    return undefined;
  }
}
