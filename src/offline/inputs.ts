// What `hookguard check` reads: files, directories (their manifests, recursively; a Helm chart rendered by the helm
// on PATH) and standard input, refusing what would make it wait forever (a FIFO, a device) or take more memory than
// any chart needs (input.maxBytes), and never following a symbolic link out of a directory it was given.
import { execFile } from 'node:child_process';
import { lstat, readdir, readFile, realpath, stat } from 'node:fs/promises';
import { join, relative, resolve, isAbsolute } from 'node:path';
import { InputError } from '../errors.js';

export interface Input {
  /** The path as given, a file found in a directory given as `dir/sub/x.yaml`, `-` for standard input. */
  file: string;
  text: string;
  /** Set when the text is `helm template`'s rendering of the chart in this directory (`file` is then the directory). */
  chartRoot?: string;
}

export interface InputLimits {
  /** At most this many bytes in all, standard input included (check.maxInputBytes, --max-input-bytes). */
  maxBytes: number;
  readStdin: (maxBytes: number) => Promise<string>;
  /** The environment helm runs with when a chart is rendered (its PATH finds helm). */
  env: Readonly<Record<string, string | undefined>>;
  /** Told what was left out and why (a symbolic link out of the directory). */
  note: (text: string) => void;
}

const MANIFEST = /\.(ya?ml|json)$/;

/** What a directory stands for: a manifest file to read (`read`: its real path), or a chart to render. */
type Found = { kind: 'file'; path: string; read: string } | { kind: 'chart'; path: string };

function within(root: string, path: string): boolean {
  const rest = relative(root, path);
  return rest === '' || (!rest.startsWith('..') && !isAbsolute(rest));
}

/** A Helm chart's directory: it holds a Chart.yaml (a regular file, not a link). */
async function isChart(directory: string): Promise<boolean> {
  return (await lstat(join(directory, 'Chart.yaml')).catch(() => undefined))?.isFile() === true;
}

/**
 * The manifests under a directory, recursively, in code-point order of their paths; hidden entries skipped; a
 * directory that holds a Chart.yaml is a chart, rendered rather than read (its templates are not YAML). A symbolic
 * link is followed only to a file inside the directory given (`root`, real path): one that leaves it (to a
 * kubeconfig, say) is left out with a note, since check --fix prints what it reads. A link to a directory is not
 * walked (no cycles).
 */
async function manifestsUnder(root: string, directory: string, note: (text: string) => void): Promise<Found[]> {
  if (await isChart(directory)) return [{ kind: 'chart', path: directory }];
  const entries = (await readdir(directory, { withFileTypes: true }))
    .filter((entry) => !entry.name.startsWith('.'))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const found: Found[] = [];
  for (const entry of entries) {
    const path = join(directory, entry.name);
    if (entry.isDirectory()) {
      found.push(...(await manifestsUnder(root, path, note)));
      continue;
    }
    if (!MANIFEST.test(entry.name)) continue;
    if (entry.isFile()) found.push({ kind: 'file', path, read: path });
    else if (entry.isSymbolicLink()) {
      const target = await realpath(path).catch(() => undefined);
      if (target === undefined) continue;
      if (!within(root, target)) note(`skipped ${path}: a symbolic link to a file outside the directory given`);
      else if ((await stat(target)).isFile()) found.push({ kind: 'file', path, read: target });
    }
  }
  return found;
}

function tooLarge(file: string, limit: number): InputError {
  return new InputError(
    `${file === '-' ? 'standard input' : file}: the input is larger than ${limit} bytes (check.maxInputBytes); raise it with --max-input-bytes`,
  );
}

/** Reads each named input in order, a directory as the manifests under it. */
export async function readInputs(paths: readonly string[], limits: InputLimits): Promise<Input[]> {
  const inputs: Input[] = [];
  let budget = limits.maxBytes;
  const take = (file: string, text: string): void => {
    budget -= Buffer.byteLength(text, 'utf8');
    if (budget < 0) throw tooLarge(file, limits.maxBytes);
    inputs.push({ file, text });
  };
  for (const path of paths) {
    if (path === '-') {
      take(path, await limits.readStdin(budget));
      continue;
    }
    for (const found of await filesOf(path, limits.note)) {
      if (found.kind === 'chart') {
        const text = await renderChart(found.path, budget, limits);
        take(found.path, text);
        inputs[inputs.length - 1]!.chartRoot = found.path;
        continue;
      }
      const { path: file, read } = found;
      // stat, not the read, says how large: a file is refused before it is read.
      const info = await stat(read).catch((error: Error) => {
        throw new InputError(`cannot read ${file}: ${error.message}`);
      });
      if (info.size > budget) throw tooLarge(file, limits.maxBytes);
      const text = await readFile(read, 'utf8').catch((error: Error) => {
        throw new InputError(`cannot read ${file}: ${error.message}`);
      });
      take(file, text);
    }
  }
  return inputs;
}

/** How long `helm template` may take on one chart. */
const HELM_TIMEOUT_MS = 60_000;

/**
 * `helm template` of the chart in `directory`, by the helm on PATH, as kube-linter lints a chart: the default release
 * name and values, every document under Helm's `# Source: chart/templates/x.yaml` line. Its output counts against
 * the input limit like a file's.
 */
function renderChart(directory: string, budget: number, limits: InputLimits): Promise<string> {
  return new Promise((done, fail) => {
    execFile(
      'helm',
      ['template', resolve(directory)],
      { env: limits.env, encoding: 'utf8', maxBuffer: Math.max(budget, 0), timeout: HELM_TIMEOUT_MS },
      (error, stdout, stderr) => {
        if (error === null) return done(stdout);
        const code = (error as { code?: unknown }).code;
        if (code === 'ENOENT')
          return fail(
            new InputError(
              `${directory} is a Helm chart (it holds Chart.yaml): check renders it with the helm on PATH, and there is none; install helm, or render it yourself: helm template ${directory} | hookguard check -`,
            ),
          );
        if (code === 'ERR_CHILD_PROCESS_STDIO_MAXBUFFER') return fail(tooLarge(directory, limits.maxBytes));
        const why = stderr.trim() || (error.killed ? `no answer in ${HELM_TIMEOUT_MS / 1000} s` : error.message);
        fail(new InputError(`${directory}: helm template failed: ${why}`));
      },
    );
  });
}

/** The file itself, or the manifests under a directory; anything else is refused before it is opened. */
async function filesOf(path: string, note: (text: string) => void): Promise<Found[]> {
  const info = await stat(path).catch((error: Error) => {
    throw new InputError(`cannot read ${path}: ${error.message}`);
  });
  if (info.isDirectory()) {
    const found = await manifestsUnder(await realpath(path), path, note);
    if (found.length === 0) throw new InputError(`${path}: no *.yaml, *.yml or *.json file in this directory`);
    return found;
  }
  if (info.isFile()) return [{ kind: 'file', path, read: path }];
  const what = info.isFIFO()
    ? 'a FIFO'
    : info.isCharacterDevice() || info.isBlockDevice()
      ? 'a device'
      : info.isSocket()
        ? 'a socket'
        : 'not a regular file';
  const link = (await lstat(path)).isSymbolicLink() ? ' (through a symbolic link)' : '';
  throw new InputError(
    `cannot read ${path}: it is ${what}${link}; check reads files and directories, and standard input as -`,
  );
}
