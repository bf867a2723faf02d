// A sandbox where container commands run for real: /bin/sh and friends, with a fake kubectl first on PATH that
// records its argv and answers as kubectl would, in one of two states of the cluster.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ContainerCommand } from '../../src/core/kubectl-delete.js';

/** A directory with a fake kubectl (and a no-op sleep) simulating one state of the cluster. */
export interface World {
  bin: string;
  log: string;
}

// Records its argv as "<argc>\0<arg>\0<arg>\0…" (safe for any bytes but NUL), then answers like
// kubectl would. `delete` reports on stderr only, so stdout holds nothing but the script's output.
function fakeKubectl(log: string, objectsExist: boolean): string {
  return `#!/bin/sh
printf '%s\\0' "$#" "$@" >> '${log}'
sub=
ignore=no
skip_value=no
for arg in "$@"; do
  if [ "$skip_value" = yes ]; then skip_value=no; continue; fi
  case "$arg" in --ignore-not-found|--ignore-not-found=true) ignore=yes ;; esac
  if [ -z "$sub" ]; then
    case "$arg" in
      -n|--namespace|--context|--kubeconfig) skip_value=yes ;;
      -*) ;;
      *) sub=$arg ;;
    esac
  fi
done
case "$sub" in
  delete)
    if [ ${objectsExist ? 'yes' : 'no'} = yes ]; then echo 'deleted' >&2; exit 0; fi
    if [ "$ignore" = yes ]; then exit 0; fi
    echo 'Error from server (NotFound): not found' >&2
    exit 1 ;;
  get) printf 'pod/a\\npod/b\\n' ;;
  *) echo "$sub: ok" ;;
esac
`;
}

export interface Run {
  status: number | null;
  stdout: Buffer;
  stderr: string;
  calls: string[][];
}

export interface Sandbox {
  /** Working directory of every run: holds a.txt, b.txt and c.md for globs to match. */
  workDir: string;
  /** The first attempt: the objects are still there. */
  present: World;
  /** A retry: an earlier attempt already deleted them. */
  gone: World;
  /** Runs argv the way the kubelet would: no shell around it, PATH leading to the fake kubectl. */
  run(argv: readonly string[], world: World): Run;
  remove(): void;
}

export function createSandbox(): Sandbox {
  const root = mkdtempSync(join(tmpdir(), 'hookguard-kubectl-'));
  const workDir = join(root, 'work');
  mkdirSync(workDir);
  for (const file of ['a.txt', 'b.txt', 'c.md']) writeFileSync(join(workDir, file), '');
  const createWorld = (name: string, objectsExist: boolean): World => {
    const bin = join(root, name);
    mkdirSync(bin);
    const log = join(root, `${name}.log`);
    writeFileSync(join(bin, 'kubectl'), fakeKubectl(log, objectsExist));
    writeFileSync(join(bin, 'sleep'), '#!/bin/sh\nexit 0\n'); // the kyverno hook sleeps 30s
    chmodSync(join(bin, 'kubectl'), 0o755);
    chmodSync(join(bin, 'sleep'), 0o755);
    return { bin, log };
  };
  return {
    workDir,
    present: createWorld('present', true),
    gone: createWorld('gone', false),
    run(argv, world) {
      rmSync(world.log, { force: true });
      const result = spawnSync(argv[0] as string, argv.slice(1), {
        cwd: workDir,
        env: { PATH: `${world.bin}:${process.env.PATH ?? ''}` },
        // No stdin, as in a container without `stdin: true`. Node's pipes are sockets, and bash with a socket on
        // stdin takes itself for a remote shell and reads ~/.bashrc: the user's settings, and 0.7 s a run here.
        stdio: ['ignore', 'pipe', 'pipe'],
        timeout: 10_000,
      });
      if (result.error) throw result.error;
      return {
        status: result.status,
        stdout: result.stdout,
        stderr: result.stderr.toString(),
        calls: readCalls(world.log),
      };
    },
    remove: () => rmSync(root, { recursive: true, force: true }),
  };
}

function readCalls(log: string): string[][] {
  if (!existsSync(log)) return [];
  const fields = readFileSync(log, 'utf8').split('\0').slice(0, -1);
  const calls: string[][] = [];
  for (let i = 0; i < fields.length;) {
    const argc = Number(fields[i]);
    calls.push(fields.slice(i + 1, i + 1 + argc));
    i += 1 + argc;
  }
  return calls;
}

/** container argv as Kubernetes runs it; args-only containers use the image's kubectl entrypoint */
export function argvOf(container: ContainerCommand): string[] {
  const command = container.command?.length ? container.command : ['kubectl'];
  return [...command, ...(container.args ?? [])];
}
