// Runs original and rewritten container commands for real, against a fake kubectl on PATH, to show
// that the rewrite turns "already deleted" into success and changes nothing else the shell does.
import { spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeKubectlDeletesIdempotent, type ContainerCommand } from '../../src/core/kubectl-delete.js';
import { KYVERNO_SCALE_TO_ZERO } from '../support/scripts.js';

const FLAG = '--ignore-not-found';
const hasBash = existsSync('/bin/bash');
if (!hasBash) console.warn('kubectl-delete.shell.test: /bin/bash not found, skipping the bash cases');

/** A directory with a fake kubectl (and a no-op sleep) simulating one state of the cluster. */
interface World {
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

let root: string;
let workDir: string;
let present: World; // the first attempt: the objects are still there
let gone: World; // a retry: an earlier attempt already deleted them

function createWorld(name: string, objectsExist: boolean): World {
  const bin = join(root, name);
  mkdirSync(bin);
  const log = join(root, `${name}.log`);
  writeFileSync(join(bin, 'kubectl'), fakeKubectl(log, objectsExist));
  writeFileSync(join(bin, 'sleep'), '#!/bin/sh\nexit 0\n'); // the kyverno hook sleeps 30s
  chmodSync(join(bin, 'kubectl'), 0o755);
  chmodSync(join(bin, 'sleep'), 0o755);
  return { bin, log };
}

beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'hookguard-kubectl-'));
  workDir = join(root, 'work');
  mkdirSync(workDir);
  for (const file of ['a.txt', 'b.txt', 'c.md']) writeFileSync(join(workDir, file), '');
  present = createWorld('present', true);
  gone = createWorld('gone', false);
});

afterAll(() => {
  rmSync(root, { recursive: true, force: true });
});

function readCalls(log: string): string[][] {
  if (!existsSync(log)) return [];
  const fields = readFileSync(log, 'utf8').split('\0').slice(0, -1);
  const calls: string[][] = [];
  for (let i = 0; i < fields.length; ) {
    const argc = Number(fields[i]);
    calls.push(fields.slice(i + 1, i + 1 + argc));
    i += 1 + argc;
  }
  return calls;
}

interface Run {
  status: number | null;
  stdout: Buffer;
  stderr: string;
  calls: string[][];
}

/** Runs argv the way the kubelet would: no shell around it, PATH leading to the fake kubectl. */
function run(argv: string[], world: World): Run {
  rmSync(world.log, { force: true });
  const result = spawnSync(argv[0]!, argv.slice(1), {
    cwd: workDir,
    env: { PATH: `${world.bin}:${process.env.PATH ?? ''}` },
  });
  if (result.error) throw result.error;
  return { status: result.status, stdout: result.stdout, stderr: result.stderr.toString(), calls: readCalls(world.log) };
}

/** container argv as Kubernetes runs it; args-only containers use the image's kubectl entrypoint */
function argvOf(container: ContainerCommand): string[] {
  const command = container.command?.length ? container.command : ['kubectl'];
  return [...command, ...(container.args ?? [])];
}

/** Runs the original and rewritten container and checks everything the rewrite promises. */
function checkRewriteEndToEnd(container: ContainerCommand): Run {
  const rewrite = makeKubectlDeletesIdempotent(container, ['bitnami/kubectl']);
  expect(rewrite).toBeDefined();
  const original = argvOf(container);
  const rewritten = argvOf({ ...container, command: rewrite?.command ?? container.command, args: rewrite?.args ?? container.args });

  const retriedOriginal = run(original, gone);
  expect(retriedOriginal.status).not.toBe(0);
  expect(retriedOriginal.stderr).toContain('Error from server (NotFound)');

  const firstAttempt = run(original, present);
  expect(firstAttempt.status, firstAttempt.stderr).toBe(0);
  const retriedRewritten = run(rewritten, gone);
  expect(retriedRewritten.status, retriedRewritten.stderr).toBe(0);

  // Same kubectl invocations, apart from the added flag; same bytes on stdout.
  const withoutFlag = (calls: string[][]): string[][] => calls.map((call) => call.filter((arg) => arg !== FLAG));
  expect(withoutFlag(retriedRewritten.calls)).toEqual(withoutFlag(firstAttempt.calls));
  const deletes = retriedRewritten.calls.filter((call) => call.includes('delete'));
  expect(deletes.length).toBeGreaterThan(0);
  for (const call of deletes) expect(call).toContain(FLAG);
  expect(retriedRewritten.stdout).toEqual(firstAttempt.stdout);
  return retriedRewritten;
}


// Everything here except the kubectl deletes must behave exactly the same after the rewrite.
const SHELL_FEATURES = [
  `echo "it's \\"quoted\\" and 'single'"`,
  `echo "$(printf '%s|' a 'b c')" \`echo tick\``,
  'echo *.txt',
  "printf 'héllo ✓\\nline two\\n'",
  'cat <<EOF',
  'kubectl delete pod heredoc-text $(echo expanded)',
  'EOF',
  '# kubectl delete pod commented-out',
  "echo 'kubectl delete not-a-command'; echo \"kubectl delete x\"",
  'x=$(kubectl -n ns delete pod b); echo "got [$x]"',
  'kubectl get pods | xargs -n 1 kubectl delete',
  'echo "done ✓"',
].join('\n');

describe('rewritten commands run for real against a fake kubectl', () => {
  it.skipIf(!hasBash)('kyverno scale-to-zero hook (bash -c, needs /bin/bash)', () => {
    const result = checkRewriteEndToEnd({ command: ['/bin/bash', '-c', KYVERNO_SCALE_TO_ZERO] });
    expect(result.stdout.toString()).toBe('scale: ok\n');
    expect(result.calls).toEqual([
      ['scale', '-n', 'ns', 'deployment', '-l', 'app.kubernetes.io/part-of=rel-kyverno', '--replicas=0'],
      ['delete', FLAG, 'validatingwebhookconfiguration', '-l', 'webhook.kyverno.io/managed-by=kyverno'],
      ['delete', FLAG, 'mutatingwebhookconfiguration', '-l', 'webhook.kyverno.io/managed-by=kyverno'],
    ]);
  });

  it('xargs pipeline (sh -c)', () => {
    const result = checkRewriteEndToEnd({ command: ['/bin/sh', '-c', 'kubectl get pods -o name | xargs kubectl delete'] });
    expect(result.calls).toEqual([
      ['get', 'pods', '-o', 'name'],
      ['delete', FLAG, 'pod/a', 'pod/b'],
    ]);
  });

  it('for loop over $(kubectl get …), script in args', () => {
    const script = 'for p in $(kubectl get po -o name); do kubectl delete $p; done';
    const result = checkRewriteEndToEnd({ command: ['/bin/sh', '-c'], args: [script] });
    expect(result.calls).toEqual([
      ['get', 'po', '-o', 'name'],
      ['delete', FLAG, 'pod/a'],
      ['delete', FLAG, 'pod/b'],
    ]);
  });

  it('quotes, substitutions, globs, heredocs, comments and non-ASCII are untouched (sh -ec)', () => {
    const result = checkRewriteEndToEnd({ command: ['/bin/sh', '-ec', SHELL_FEATURES] });
    expect(result.stdout.toString()).toBe(
      `it's "quoted" and 'single'\n` +
        'a|b c| tick\n' +
        'a.txt b.txt\n' +
        'héllo ✓\nline two\n' +
        'kubectl delete pod heredoc-text expanded\n' +
        'kubectl delete not-a-command\n' +
        'kubectl delete x\n' +
        'got []\n' +
        'done ✓\n',
    );
    expect(result.calls).toEqual([
      ['-n', 'ns', 'delete', FLAG, 'pod', 'b'],
      ['get', 'pods'],
      ['delete', FLAG, 'pod/a'],
      ['delete', FLAG, 'pod/b'],
    ]);
  });

  it('exec form: kubectl resolved through PATH', () => {
    const result = checkRewriteEndToEnd({
      command: ['kubectl', 'delete', 'mutatingwebhookconfiguration', '-l', 'webhook.kyverno.io/managed-by=kyverno'],
    });
    expect(result.calls).toEqual([['delete', 'mutatingwebhookconfiguration', '-l', 'webhook.kyverno.io/managed-by=kyverno', FLAG]]);
  });

  it('exec form: arguments with spaces, quotes and newlines reach kubectl intact', () => {
    const name = `it's "odd"\nname ✓`;
    const result = checkRewriteEndToEnd({ command: ['kubectl'], args: ['-n', 'my ns', 'delete', 'configmap', name, '--', '-dash'] });
    expect(result.calls).toEqual([['-n', 'my ns', 'delete', 'configmap', name, FLAG, '--', '-dash']]);
  });

  it('args-only container of a kubectl image (entrypoint kubectl)', () => {
    const result = checkRewriteEndToEnd({ image: 'bitnami/kubectl:1.30', args: ['-n', 'ns', 'delete', 'job', 'old-hook'] });
    expect(result.calls).toEqual([['-n', 'ns', 'delete', 'job', 'old-hook', FLAG]]);
  });
});
