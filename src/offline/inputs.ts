// What `hookguard check` reads: files, directories (their manifests, recursively) and standard input, refusing what
// would make it wait forever (a FIFO, a device) or take more memory than any chart needs (input.maxBytes).
import { lstat, readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { InputError } from '../errors.js';

export interface Input {
  /** The path as given, a file found in a directory given as `dir/sub/x.yaml`, `-` for standard input. */
  file: string;
  text: string;
}

export interface InputLimits {
  /** At most this many bytes in all, standard input included (check.maxInputBytes, --max-input-bytes). */
  maxBytes: number;
  readStdin: (maxBytes: number) => Promise<string>;
}

const MANIFEST = /\.(ya?ml|json)$/;

/** The manifests under a directory, recursively, in code-point order of their paths; hidden entries skipped. */
async function manifestsUnder(directory: string): Promise<string[]> {
  const entries = (await readdir(directory, { withFileTypes: true }))
    .filter((entry) => !entry.name.startsWith('.'))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const files: string[] = [];
  for (const entry of entries) {
    const path = join(directory, entry.name);
    // A symbolic link is followed to what it names; a link to a directory is not walked (no cycles).
    const kind = entry.isSymbolicLink() ? await stat(path).catch(() => undefined) : entry;
    if (kind?.isDirectory() && !entry.isSymbolicLink()) files.push(...(await manifestsUnder(path)));
    else if (kind?.isFile() && MANIFEST.test(entry.name)) files.push(path);
  }
  return files;
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
    const files = await filesOf(path);
    for (const file of files) {
      // stat, not the read, says how large: a file is refused before it is read.
      const info = await stat(file).catch((error: Error) => {
        throw new InputError(`cannot read ${file}: ${error.message}`);
      });
      if (info.size > budget) throw tooLarge(file, limits.maxBytes);
      const text = await readFile(file, 'utf8').catch((error: Error) => {
        throw new InputError(`cannot read ${file}: ${error.message}`);
      });
      take(file, text);
    }
  }
  return inputs;
}

/** The file itself, or the manifests under a directory; anything else is refused before it is opened. */
async function filesOf(path: string): Promise<string[]> {
  const info = await stat(path).catch((error: Error) => {
    throw new InputError(`cannot read ${path}: ${error.message}`);
  });
  if (info.isDirectory()) {
    const files = await manifestsUnder(path);
    if (files.length === 0) throw new InputError(`${path}: no *.yaml, *.yml or *.json file in this directory`);
    return files;
  }
  if (info.isFile()) return [path];
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
