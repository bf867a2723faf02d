// Runs original and rewritten container commands for real, against a fake kubectl on PATH, to show
// that the rewrite turns "already deleted" into success and changes nothing else the shell does.
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { makeKubectlDeletesIdempotent, type ContainerCommand } from '../../src/core/kubectl-delete.js';
import { argvOf, createSandbox, type Run, type Sandbox } from '../support/fake-kubectl.js';
import { KYVERNO_SCALE_TO_ZERO } from '../support/scripts.js';

const FLAG = '--ignore-not-found';
const hasBash = existsSync('/bin/bash');
if (!hasBash) console.warn('kubectl-delete.shell.test: /bin/bash not found, skipping the bash cases');

let sandbox: Sandbox;

beforeAll(() => {
  sandbox = createSandbox();
});

afterAll(() => {
  sandbox.remove();
});

/** Runs the original and rewritten container and checks everything the rewrite promises. */
function checkRewriteEndToEnd(container: ContainerCommand): Run {
  const rewrite = makeKubectlDeletesIdempotent(container, ['bitnami/kubectl']);
  expect(rewrite).toBeDefined();
  const original = argvOf(container);
  const rewritten = argvOf({
    ...container,
    command: rewrite?.command ?? container.command,
    args: rewrite?.args ?? container.args,
  });

  const retriedOriginal = sandbox.run(original, sandbox.gone);
  expect(retriedOriginal.status).not.toBe(0);
  expect(retriedOriginal.stderr).toContain('Error from server (NotFound)');

  const firstAttempt = sandbox.run(original, sandbox.present);
  expect(firstAttempt.status, firstAttempt.stderr).toBe(0);
  const retriedRewritten = sandbox.run(rewritten, sandbox.gone);
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
  'echo \'kubectl delete not-a-command\'; echo "kubectl delete x"',
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
    const result = checkRewriteEndToEnd({
      command: ['/bin/sh', '-c', 'kubectl get pods -o name | xargs kubectl delete'],
    });
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
    expect(result.calls).toEqual([
      ['delete', 'mutatingwebhookconfiguration', '-l', 'webhook.kyverno.io/managed-by=kyverno', FLAG],
    ]);
  });

  it('exec form: arguments with spaces, quotes and newlines reach kubectl intact', () => {
    const name = `it's "odd"\nname ✓`;
    const result = checkRewriteEndToEnd({
      command: ['kubectl'],
      args: ['-n', 'my ns', 'delete', 'configmap', name, '--', '-dash'],
    });
    expect(result.calls).toEqual([['-n', 'my ns', 'delete', 'configmap', name, FLAG, '--', '-dash']]);
  });

  it('args-only container of a kubectl image (entrypoint kubectl)', () => {
    const result = checkRewriteEndToEnd({
      image: 'bitnami/kubectl:1.30',
      args: ['-n', 'ns', 'delete', 'job', 'old-hook'],
    });
    expect(result.calls).toEqual([['-n', 'ns', 'delete', 'job', 'old-hook', FLAG]]);
  });
});
