import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  isKubectlImage,
  makeKubectlDeletesIdempotent,
  type ContainerCommand,
  type DeleteRewrite,
} from '../../src/core/kubectl-delete.js';
import { KYVERNO_SCALE_TO_ZERO } from '../support/scripts.js';
import { charactersSliced as countSliced } from '../support/work.js';

const KUBECTL_IMAGES = ['bitnami/kubectl', 'registry.k8s.io/kubectl'];
const FLAG = '--ignore-not-found';

function rewrite(container: ContainerCommand): DeleteRewrite | undefined {
  return makeKubectlDeletesIdempotent(container, KUBECTL_IMAGES);
}

/** Rewrites `sh -c <script>` and returns just the new script (undefined when unchanged). */
function rewriteScript(script: string): string | undefined {
  const result = rewrite({ command: ['/bin/sh', '-c', script] });
  if (result === undefined) return undefined;
  expect(result.args).toBeUndefined();
  return result.command?.[2];
}

describe('exec form', () => {
  it.each<[string, ContainerCommand, DeleteRewrite | undefined]>([
    [
      'kyverno webhook cleanup: appended to command',
      { command: ['kubectl', 'delete', 'mutatingwebhookconfiguration', '-l', 'webhook.kyverno.io/managed-by=kyverno'] },
      {
        command: [
          'kubectl',
          'delete',
          'mutatingwebhookconfiguration',
          '-l',
          'webhook.kyverno.io/managed-by=kyverno',
          FLAG,
        ],
        changes: ['kubectl delete mutatingwebhookconfiguration -l webhook.kyverno.io/m… (exec form)'],
      },
    ],
    [
      'appended to args when args is non-empty',
      { command: ['kubectl'], args: ['delete', 'job', 'x'] },
      { args: ['delete', 'job', 'x', FLAG], changes: ['kubectl delete job x (exec form)'] },
    ],
    [
      'appended to command when args is empty',
      { command: ['/usr/local/bin/kubectl', 'delete', 'pod', 'a'], args: [] },
      {
        command: ['/usr/local/bin/kubectl', 'delete', 'pod', 'a', FLAG],
        changes: ['kubectl delete pod a (exec form)'],
      },
    ],
    [
      'global -n before delete',
      { command: ['kubectl', '-n', 'ns', 'delete', 'deploy', '-l', 'x'] },
      {
        command: ['kubectl', '-n', 'ns', 'delete', 'deploy', '-l', 'x', FLAG],
        changes: ['kubectl -n ns delete deploy -l x (exec form)'],
      },
    ],
    [
      'several global flags with separate values',
      { command: ['kubectl', '--context', 'c', '--kubeconfig', '/k', '-v', '5', '--as', 'me', 'delete', 'cm', 'a'] },
      {
        command: [
          'kubectl',
          '--context',
          'c',
          '--kubeconfig',
          '/k',
          '-v',
          '5',
          '--as',
          'me',
          'delete',
          'cm',
          'a',
          FLAG,
        ],
        changes: ['kubectl --context c --kubeconfig /k -v 5 --as me delete cm a (exec form)'],
      },
    ],
    [
      '--flag=value and boolean global flags consume nothing',
      { command: ['kubectl', '--namespace=ns', '--insecure-skip-tls-verify', 'delete', 'pod', 'a'] },
      {
        command: ['kubectl', '--namespace=ns', '--insecure-skip-tls-verify', 'delete', 'pod', 'a', FLAG],
        changes: ['kubectl --namespace=ns --insecure-skip-tls-verify delete pod a (exec form)'],
      },
    ],
    [
      'inserted before a bare -- in command',
      { command: ['kubectl', 'delete', 'pod', '--', '-odd-name'] },
      {
        command: ['kubectl', 'delete', 'pod', FLAG, '--', '-odd-name'],
        changes: ['kubectl delete pod -- -odd-name (exec form)'],
      },
    ],
    [
      'inserted before a bare -- in args',
      { command: ['kubectl'], args: ['delete', 'pod', '--', '-odd-name'] },
      { args: ['delete', 'pod', FLAG, '--', '-odd-name'], changes: ['kubectl delete pod -- -odd-name (exec form)'] },
    ],
    [
      'a -- that starts args goes into args',
      { command: ['kubectl', 'delete', 'pod'], args: ['--', '-odd-name'] },
      { args: [FLAG, '--', '-odd-name'], changes: ['kubectl delete pod -- -odd-name (exec form)'] },
    ],
    [
      '--ignore-not-found after -- is a pod name, not the flag',
      { command: ['kubectl', 'delete', 'pod', '--', FLAG] },
      {
        command: ['kubectl', 'delete', 'pod', FLAG, '--', FLAG],
        changes: ['kubectl delete pod -- --ignore-not-found (exec form)'],
      },
    ],
    ['already --ignore-not-found', { command: ['kubectl', 'delete', 'pod', 'a', FLAG] }, undefined],
    [
      'already --ignore-not-found=true',
      { command: ['kubectl'], args: ['delete', '--ignore-not-found=true', 'pod', 'a'] },
      undefined,
    ],
    [
      'explicit --ignore-not-found=false is the author’s choice',
      { command: ['kubectl', 'delete', 'pod', 'a', '--ignore-not-found=false'] },
      undefined,
    ],
    ['not delete', { command: ['kubectl', 'get', 'pods'] }, undefined],
    [
      'namespace named delete is not the subcommand',
      { command: ['kubectl', '-n', 'delete', 'get', 'pods'] },
      undefined,
    ],
    ['delete as a later argument', { command: ['kubectl', 'annotate', 'pod', 'a', 'delete=yes'] }, undefined],
    ['no subcommand at all', { command: ['kubectl', '-n', 'ns'] }, undefined],
    ['not kubectl', { command: ['echo', 'kubectl', 'delete', 'x'] }, undefined],
    ['kubectl-lookalike binary', { command: ['/bin/kubectl-neat', 'delete', 'x'] }, undefined],
    [
      'no exec-form wrappers (only shell scripts understand them)',
      { command: ['timeout', '60', 'kubectl', 'delete', 'x'] },
      undefined,
    ],
    ['no command and no args', {}, undefined],
  ])('%s', (_name, container, expected) => {
    expect(rewrite(container)).toEqual(expected);
  });
});

describe('args-only containers of kubectl images', () => {
  it.each<[string, ContainerCommand, DeleteRewrite | undefined]>([
    [
      'bitnami/kubectl with a tag',
      { image: 'bitnami/kubectl:1.30', args: ['delete', 'job', 'x'] },
      { args: ['delete', 'job', 'x', FLAG], changes: ['kubectl delete job x (kubectl image args)'] },
    ],
    [
      'registry.k8s.io/kubectl with global flags',
      { image: 'registry.k8s.io/kubectl:v1.32.7', args: ['-n', 'ns', 'delete', 'cm', 'a'] },
      { args: ['-n', 'ns', 'delete', 'cm', 'a', FLAG], changes: ['kubectl -n ns delete cm a (kubectl image args)'] },
    ],
    [
      'empty command counts as no command',
      { image: 'docker.io/bitnami/kubectl', command: [], args: ['delete', 'pod', '--', 'a'] },
      { args: ['delete', 'pod', FLAG, '--', 'a'], changes: ['kubectl delete pod -- a (kubectl image args)'] },
    ],
    [
      'gatekeeper CRD image is not a kubectl image',
      { image: 'openpolicyagent/gatekeeper-crds:v3.23.0', args: ['apply', '-f', 'crds/'] },
      undefined,
    ],
    ['unknown image, even with a delete', { image: 'alpine/k8s:1.30', args: ['delete', 'pod', 'a'] }, undefined],
    ['kubectl image but not delete', { image: 'bitnami/kubectl', args: ['get', 'pods'] }, undefined],
    ['kubectl image already idempotent', { image: 'bitnami/kubectl', args: ['delete', 'pod', 'a', FLAG] }, undefined],
    ['kubectl image without args', { image: 'bitnami/kubectl' }, undefined],
    ['no image', { args: ['delete', 'pod', 'a'] }, undefined],
  ])('%s', (_name, container, expected) => {
    expect(rewrite(container)).toEqual(expected);
  });
});

describe('shell scripts: which argv element is the script', () => {
  const script = 'kubectl delete pod a';
  const fixed = `kubectl delete ${FLAG} pod a`;
  it.each<[string, ContainerCommand, DeleteRewrite | undefined]>([
    [
      'sh -c',
      { command: ['sh', '-c', script] },
      { command: ['sh', '-c', fixed], changes: ['kubectl delete pod a (shell script)'] },
    ],
    [
      '/bin/sh -c with the script in args',
      { command: ['/bin/sh', '-c'], args: [script] },
      { args: [fixed], changes: ['kubectl delete pod a (shell script)'] },
    ],
    [
      '/bin/sh with -c and the script in args',
      { command: ['/bin/sh'], args: ['-c', script] },
      { args: ['-c', fixed], changes: ['kubectl delete pod a (shell script)'] },
    ],
    [
      'bash -ec',
      { command: ['/bin/bash', '-ec', script] },
      { command: ['/bin/bash', '-ec', fixed], changes: ['kubectl delete pod a (shell script)'] },
    ],
    [
      'bash -euc',
      { command: ['bash', '-euc', script] },
      { command: ['bash', '-euc', fixed], changes: ['kubectl delete pod a (shell script)'] },
    ],
    [
      'ash -xc',
      { command: ['ash', '-xc', script] },
      { command: ['ash', '-xc', fixed], changes: ['kubectl delete pod a (shell script)'] },
    ],
    [
      'dash -e -c',
      { command: ['dash', '-e', '-c', script] },
      { command: ['dash', '-e', '-c', fixed], changes: ['kubectl delete pod a (shell script)'] },
    ],
    [
      'zsh -c -e (options after -c)',
      { command: ['zsh', '-c', '-e', script] },
      { command: ['zsh', '-c', '-e', fixed], changes: ['kubectl delete pod a (shell script)'] },
    ],
    [
      'bash -o pipefail -c',
      { command: ['bash', '-o', 'pipefail', '-c', script] },
      { command: ['bash', '-o', 'pipefail', '-c', fixed], changes: ['kubectl delete pod a (shell script)'] },
    ],
    [
      'bash --norc -c -- script',
      { command: ['bash', '--norc', '-c', '--', script] },
      { command: ['bash', '--norc', '-c', '--', fixed], changes: ['kubectl delete pod a (shell script)'] },
    ],
    [
      '/usr/bin/env bash -c',
      { command: ['/usr/bin/env', 'bash', '-c'], args: [script] },
      { args: [fixed], changes: ['kubectl delete pod a (shell script)'] },
    ],
    ['script file, no -c', { command: ['/bin/sh', '/scripts/cleanup.sh'] }, undefined],
    ['-e without -c', { command: ['/bin/sh', '-e', 'kubectl delete pod a'] }, undefined],
    ['-c without a script', { command: ['/bin/sh', '-c'] }, undefined],
    ['-c -- without a script', { command: ['/bin/sh', '-c', '--'] }, undefined],
    ['not a shell', { command: ['python3', '-c', script] }, undefined],
    ['-o value is not the script', { command: ['bash', '-c', '-o', 'kubectl delete pod a'] }, undefined],
  ])('%s', (_name, container, expected) => {
    expect(rewrite(container)).toEqual(expected);
  });
});

const OPENEBS_CRD_KEEP =
  '(kubectl annotate --overwrite crd a b c helm.sh/resource-policy=keep || true) && ' +
  '(kubectl -n ns delete deploy -l openebs.io/component-name=openebs-localpv-provisioner --ignore-not-found)';

describe('shell scripts: real chart hooks', () => {
  it('kyverno scale-to-zero: both deletes rewritten, everything else untouched', () => {
    expect(rewrite({ command: ['/bin/bash', '-c', KYVERNO_SCALE_TO_ZERO] })).toEqual({
      command: [
        '/bin/bash',
        '-c',
        'set -euo pipefail\n' +
          'kubectl scale -n ns deployment -l app.kubernetes.io/part-of=rel-kyverno --replicas=0\n' +
          'sleep 30\n' +
          'kubectl delete --ignore-not-found validatingwebhookconfiguration -l webhook.kyverno.io/managed-by=kyverno\n' +
          'kubectl delete --ignore-not-found mutatingwebhookconfiguration -l webhook.kyverno.io/managed-by=kyverno',
      ],
      changes: [
        'kubectl delete validatingwebhookconfiguration -l webhook.kyverno… (shell script)',
        'kubectl delete mutatingwebhookconfiguration -l webhook.kyverno.i… (shell script)',
      ],
    });
  });

  it('every change line stays under 80 characters', () => {
    const changes = rewrite({ command: ['/bin/bash', '-c', KYVERNO_SCALE_TO_ZERO] })?.changes ?? [];
    for (const change of changes) expect(change.length).toBeLessThanOrEqual(80);
  });

  it('kyverno configmap cleanup that already ignores NotFound is unchanged', () => {
    expect(
      rewrite({ command: ['/bin/sh', '-c', 'kubectl delete cm --ignore-not-found -n ns rel-kyverno'] }),
    ).toBeUndefined();
  });

  it('openebs CRD keep script is unchanged', () => {
    expect(rewrite({ command: ['/bin/sh', '-c'], args: [OPENEBS_CRD_KEEP] })).toBeUndefined();
  });
});

describe('shell scripts: what counts as a kubectl delete', () => {
  it.each<[string, string, string | undefined]>([
    // separators
    [
      'two commands on one line',
      'kubectl get pods; kubectl delete pod a',
      'kubectl get pods; kubectl delete --ignore-not-found pod a',
    ],
    [
      '&& and ||',
      'true && kubectl delete pod a || kubectl delete pod b',
      'true && kubectl delete --ignore-not-found pod a || kubectl delete --ignore-not-found pod b',
    ],
    ['background &', 'kubectl delete pod a & wait', 'kubectl delete --ignore-not-found pod a & wait'],
    [
      'subshell and group',
      '(kubectl delete pod a) && { kubectl delete pod b; }',
      '(kubectl delete --ignore-not-found pod a) && { kubectl delete --ignore-not-found pod b; }',
    ],
    [
      'case branch',
      'case "$1" in\n  x) kubectl delete pod a;;\nesac',
      'case "$1" in\n  x) kubectl delete --ignore-not-found pod a;;\nesac',
    ],
    ['line continuation', 'kubectl delete \\\n  pod a', 'kubectl delete --ignore-not-found \\\n  pod a'],
    ['no space before ;', 'kubectl delete pod a;echo done', 'kubectl delete --ignore-not-found pod a;echo done'],
    ['a delete that is the last word', 'kubectl delete', 'kubectl delete --ignore-not-found'],
    // pipelines and loops
    [
      'xargs pipeline',
      'kubectl get pods -o name | xargs kubectl delete',
      'kubectl get pods -o name | xargs kubectl delete --ignore-not-found',
    ],
    [
      'for loop over $(kubectl get)',
      'for p in $(kubectl get po -o name); do kubectl delete $p; done',
      'for p in $(kubectl get po -o name); do kubectl delete --ignore-not-found $p; done',
    ],
    [
      'while read loop',
      'kubectl get po -o name | while read p; do kubectl delete "$p"; done',
      'kubectl get po -o name | while read p; do kubectl delete --ignore-not-found "$p"; done',
    ],
    // substitutions count: the command inside them runs
    ['inside $(…)', 'out=$(kubectl delete pod a)', 'out=$(kubectl delete --ignore-not-found pod a)'],
    [
      'inside "$(…)"',
      'echo "deleted: $(kubectl delete pod a)"',
      'echo "deleted: $(kubectl delete --ignore-not-found pod a)"',
    ],
    ['inside backticks', 'echo `kubectl delete pod a`', 'echo `kubectl delete --ignore-not-found pod a`'],
    [
      'nested $( $( ) )',
      'echo $(echo $(kubectl delete pod a))',
      'echo $(echo $(kubectl delete --ignore-not-found pod a))',
    ],
    [
      'subshell inside $(…)',
      'x=$( (kubectl delete pod a) ; kubectl delete pod b)',
      'x=$( (kubectl delete --ignore-not-found pod a) ; kubectl delete --ignore-not-found pod b)',
    ],
    // global flags and words we cannot evaluate
    ['-n before delete', 'kubectl -n ns delete deploy -l x', 'kubectl -n ns delete --ignore-not-found deploy -l x'],
    [
      'quoted variable namespace',
      'kubectl -n "$NS" --context=c delete pod a',
      'kubectl -n "$NS" --context=c delete --ignore-not-found pod a',
    ],
    [
      'full path to kubectl',
      '/usr/local/bin/kubectl delete pod a',
      '/usr/local/bin/kubectl delete --ignore-not-found pod a',
    ],
    ['quoted kubectl still runs kubectl', '"kubectl" delete pod a', '"kubectl" delete --ignore-not-found pod a'],
    ['kubectl held in a variable is not evaluated', '$KUBECTL delete pod a', undefined],
    ['namespace named delete', 'kubectl -n delete get pods', undefined],
    // redirections
    [
      'redirections after',
      'kubectl delete pod a >/dev/null 2>&1',
      'kubectl delete --ignore-not-found pod a >/dev/null 2>&1',
    ],
    [
      '&> redirection',
      'kubectl delete pod a &>/dev/null; echo ok',
      'kubectl delete --ignore-not-found pod a &>/dev/null; echo ok',
    ],
    [
      'redirection before the command',
      '2>/dev/null kubectl delete pod a',
      '2>/dev/null kubectl delete --ignore-not-found pod a',
    ],
    // already idempotent, or deliberately not
    ['already --ignore-not-found', 'kubectl delete pod a --ignore-not-found', undefined],
    ['quoted --ignore-not-found', 'kubectl delete pod a "--ignore-not-found"', undefined],
    ['--ignore-not-found=false left alone', 'kubectl delete pod a --ignore-not-found=false', undefined],
    ['--ignore-not-found=$VAR left alone', 'kubectl delete pod a --ignore-not-found=$IGNORE', undefined],
    [
      'the flag only counts in its own command',
      'kubectl delete pod a --ignore-not-found; kubectl delete pod b',
      'kubectl delete pod a --ignore-not-found; kubectl delete --ignore-not-found pod b',
    ],
    [
      'the flag on the other side of a pipe does not count',
      'kubectl delete pod a | grep --ignore-not-found',
      'kubectl delete --ignore-not-found pod a | grep --ignore-not-found',
    ],
    // not a command
    ["'delete' quoted", "kubectl 'delete' pod a", undefined],
    ['"delete" quoted', 'kubectl "delete" pod a', undefined],
    ['\\delete escaped', 'kubectl \\delete pod a', undefined],
    ['delete built from a variable', 'kubectl ${VERB} pod a', undefined],
    ['inside double quotes', 'echo "kubectl delete x"', undefined],
    ['inside single quotes', "echo 'kubectl delete x; kubectl delete y'", undefined],
    ["inside $'…'", "echo $'kubectl delete x\\'s'", undefined],
    ['comment line', '# kubectl delete x\necho hi', undefined],
    // quotes where the scanner used to lose its place (issue 22)
    ['quotes inside ${…}', "echo ${x:-'}'} ';kubectl delete pod x'", undefined],
    ['double quotes inside ${…}', 'echo ${x:-"}"} ";kubectl delete pod x"', undefined],
    ["$' inside double quotes is a dollar sign", `echo "$'" '' ";kubectl delete pod x"`, undefined],
    // sh (dash) ends "${x:-'}" at the first }, bash pairs the quotes: which text is a command depends on the shell
    ['single quotes in ${…} inside double quotes', `echo "\${x:-'}" ; kubectl delete pod y ; echo "'}"`, undefined],
    // bash reads \' inside $'…' as a quote, dash (which has no $'…') as the end of the string
    ["\\' inside $'…'", "echo $'a\\'; kubectl delete pod y; echo '", undefined],
    [
      'a substitution in a ${…} default runs',
      'echo ${x:-$(kubectl delete pod a)}; kubectl delete pod b',
      'echo ${x:-$(kubectl delete --ignore-not-found pod a)}; kubectl delete --ignore-not-found pod b',
    ],
    [
      "$'…' outside double quotes is one string",
      "echo $'it\\\\s'; kubectl delete pod b",
      "echo $'it\\\\s'; kubectl delete --ignore-not-found pod b",
    ],
    // the script's own kubectl takes whatever it is given
    ['a function named kubectl', 'kubectl() { echo "$@"; }\nkubectl delete pod a', undefined],
    ['a function named kubectl, spaced', 'kubectl ( ) { echo "$@"; }; kubectl delete pod a', undefined],
    ['a bash function kubectl', 'function kubectl { echo "$@"; }; kubectl delete pod a', undefined],
    ['a function named by path', '/usr/bin/kubectl() { :; }; kubectl delete pod a', undefined],
    ['an alias kubectl', "alias kubectl='echo'; kubectl delete pod a", undefined],
    [
      'a function of another name',
      'cleanup() { kubectl delete pod "$1"; }; cleanup a',
      'cleanup() { kubectl delete --ignore-not-found pod "$1"; }; cleanup a',
    ],
    ['trailing comment', 'echo hi # kubectl delete x', undefined],
    ['# inside a word is not a comment', 'echo a#b; kubectl delete x', 'echo a#b; kubectl delete --ignore-not-found x'],
    ['$# is not a comment', 'echo $#; kubectl delete x', 'echo $#; kubectl delete --ignore-not-found x'],
    ['argument of echo', 'echo kubectl delete x', undefined],
    ['${…} default containing the words', 'echo ${X:-kubectl delete x}', undefined],
    ['arithmetic', 'echo $((1 << 2)); kubectl delete x', 'echo $((1 << 2)); kubectl delete --ignore-not-found x'],
    [
      'other kubectl subcommands',
      'kubectl get pods; kubectl scale deploy a --replicas=0; kubectl apply -f -',
      undefined,
    ],
    ['no kubectl at all', 'rm -rf /tmp/x && delete x', undefined],
    // heredocs are data
    [
      'heredoc body',
      'cat <<EOF\nkubectl delete pod a\nEOF\nkubectl delete pod b',
      'cat <<EOF\nkubectl delete pod a\nEOF\nkubectl delete --ignore-not-found pod b',
    ],
    [
      'quoted heredoc delimiter',
      "cat <<'EOF' > /tmp/x\nkubectl delete pod a\nEOF\nkubectl delete pod b",
      "cat <<'EOF' > /tmp/x\nkubectl delete pod a\nEOF\nkubectl delete --ignore-not-found pod b",
    ],
    [
      '<<- strips tabs before the delimiter',
      'cat <<-EOF\n\tkubectl delete pod a\n\tEOF\nkubectl delete pod b',
      'cat <<-EOF\n\tkubectl delete pod a\n\tEOF\nkubectl delete --ignore-not-found pod b',
    ],
    ['heredoc fed to kubectl apply', 'kubectl apply -f - <<EOF\nkind: delete\nEOF', undefined],
    [
      'command after the heredoc operator on the same line',
      'cat <<EOF; kubectl delete pod a\nkubectl delete pod b\nEOF',
      'cat <<EOF; kubectl delete --ignore-not-found pod a\nkubectl delete pod b\nEOF',
    ],
    [
      'here-string is not a heredoc',
      'cat <<< x\nkubectl delete pod a',
      'cat <<< x\nkubectl delete --ignore-not-found pod a',
    ],
    [
      'non-ASCII and odd spacing preserved',
      'echo "héllo ✓"\t;  kubectl   delete\tpod  a',
      'echo "héllo ✓"\t;  kubectl   delete --ignore-not-found\tpod  a',
    ],
  ])('%s', (_name, script, expected) => {
    expect(rewriteScript(script)).toBe(expected);
  });
});

describe('shell scripts: prefixes before the command name', () => {
  it.each<[string, string]>([
    ['env assignment', 'KUBECONFIG=/k kubectl delete pod a'],
    ['two assignments, one quoted', 'A=1 B="x y" kubectl delete pod a'],
    ['if', 'if kubectl delete pod a; then :; fi'],
    ['then / else', 'if true; then kubectl delete pod a; else kubectl delete pod a; fi'],
    ['elif', 'if false; then :; elif kubectl delete pod a; then :; fi'],
    ['while / do', 'while kubectl delete pod a; do sleep 1; done'],
    ['until', 'until kubectl delete pod a; do sleep 1; done'],
    ['!', '! kubectl delete pod a'],
    ['time', 'time kubectl delete pod a'],
    ['time -p', 'time -p kubectl delete pod a'],
    ['{', '{ kubectl delete pod a; }'],
    ['exec', 'exec kubectl delete pod a'],
    ['command', 'command kubectl delete pod a'],
    ['nice', 'nice kubectl delete pod a'],
    ['nice -n 10', 'nice -n 10 kubectl delete pod a'],
    ['nohup', 'nohup kubectl delete pod a'],
    ['env with assignments', 'env A=1 B=2 kubectl delete pod a'],
    ['env -i -u X', 'env -i -u HOME PATH=/bin kubectl delete pod a'],
    ['/usr/bin/env', '/usr/bin/env kubectl delete pod a'],
    ['timeout duration', 'timeout 60s kubectl delete pod a'],
    ['timeout -s KILL -k 5 duration', 'timeout -s KILL -k 5 2m kubectl delete pod a'],
    ['timeout --long-options', 'timeout --signal=KILL --foreground 30 kubectl delete pod a'],
    ['xargs', 'echo a | xargs kubectl delete pod a'],
    ['xargs -I {}', 'echo a | xargs -I {} kubectl delete pod a'],
    ['xargs -I{}', 'echo a | xargs -I{} kubectl delete pod a'],
    ['xargs -n 1 -P 4', 'echo a | xargs -n 1 -P 4 kubectl delete pod a'],
    ['xargs -r -0', 'echo a | xargs -r -0 kubectl delete pod a'],
    ['xargs -L 1', 'echo a | xargs -L 1 kubectl delete pod a'],
    ['xargs -d X', "echo a | xargs -d '\\n' kubectl delete pod a"],
    ['xargs --no-run-if-empty --', 'echo a | xargs --no-run-if-empty -- kubectl delete pod a'],
    ['wrappers stacked', 'exec env A=1 timeout 10 nice -n 5 nohup kubectl delete pod a'],
  ])('%s', (_name, script) => {
    expect(rewriteScript(script)).toBe(script.replaceAll('kubectl delete', 'kubectl delete --ignore-not-found'));
  });

  it.each<[string, string]>([
    ['wrapped non-kubectl command', 'timeout 10 echo kubectl delete pod a'],
    ['xargs option value named kubectl', 'echo | xargs -I kubectl echo delete'],
    ['wrapper with nothing to run', 'env A=1'],
    ['timeout with only a duration', 'timeout 5'],
  ])('%s is not a kubectl delete', (_name, script) => {
    expect(rewriteScript(script)).toBeUndefined();
  });
});

describe('untrusted input', () => {
  it.each<[string, unknown]>([
    ['command is a string', { command: 'kubectl delete pod a' }],
    ['args is a string', { command: ['kubectl'], args: 'delete pod a' }],
    ['command holds a number', { command: ['kubectl', 'delete', 3] }],
    ['args holds null', { command: ['kubectl'], args: ['delete', null] }],
    ['command is null', { command: null, args: ['delete', 'a'], image: 'bitnami/kubectl' }],
    ['command is an object', { command: { 0: 'kubectl', 1: 'delete' } }],
    ['image is a number', { image: 7, args: ['delete', 'a'] }],
    ['container is null', null],
    ['container is a string', 'kubectl delete pod a'],
  ])('%s → undefined, no throw', (_name, container) => {
    expect(rewrite(container as ContainerCommand)).toBeUndefined();
  });

  it('unterminated quotes and substitutions are scanned to the end of the script', () => {
    expect(rewriteScript('echo "$(kubectl delete `a ${b')).toBe('echo "$(kubectl delete --ignore-not-found `a ${b');
    expect(rewriteScript("echo 'kubectl delete a")).toBeUndefined();
  });
});

describe('isKubectlImage', () => {
  it.each<[string | undefined, boolean]>([
    ['bitnami/kubectl', true],
    ['bitnami/kubectl:1.25', true],
    ['docker.io/bitnami/kubectl:1.25@sha256:0123456789abcdef', true],
    ['index.docker.io/bitnami/kubectl', true],
    ['registry-1.docker.io/bitnami/kubectl:latest', true],
    ['bitnami/kubectl@sha256:0123456789abcdef', true],
    ['registry.k8s.io/kubectl:v1.32.7', true],
    ['registry.k8s.io/kubectl', true],
    ['bitnami/kubectl-extra', false],
    ['bitnami/kubectl-extra:1.0', false],
    ['mybitnami/kubectl', false],
    ['quay.io/bitnami/kubectl', false],
    ['registry.k8s.io/kubectl/extra', false],
    ['kubectl', false],
    ['openpolicyagent/gatekeeper-crds:v3.23.0', false],
    ['', false],
    [undefined, false],
  ])('%s → %s', (image, expected) => {
    expect(isKubectlImage(image, KUBECTL_IMAGES)).toBe(expected);
  });

  it.each<[string, string, boolean]>([
    ['docker.io/library/alpine:3', 'alpine', true],
    ['alpine', 'docker.io/library/alpine', true],
    ['library/alpine@sha256:00', 'alpine', true],
    ['localhost:5000/kubectl:1', 'localhost:5000/kubectl', true],
    ['localhost:5000/kubectl', 'kubectl', false],
  ])('%s against list entry %s → %s', (image, entry, expected) => {
    expect(isKubectlImage(image, [entry])).toBe(expected);
  });
});

describe('properties', () => {
  // Scripts mix plausible kubectl commands with shell noise (unbalanced quotes, substitutions,
  // heredoc operators, comments…) so that roughly a fifth of them contain something to rewrite.
  const noise = [
    'kubectl',
    'delete',
    'get',
    '-n',
    'ns',
    'pods',
    '|',
    'xargs',
    ';',
    '&&',
    '||',
    '&',
    '(',
    ')',
    '{',
    '}',
    "'",
    '"',
    '\\',
    '$(',
    '`',
    '${',
    '$',
    '#',
    '\n',
    '\t',
    'then',
    FLAG,
    '--',
    'env',
    'A=1',
    'timeout',
    '5',
    '<<EOF',
    "<<'EOF'",
    'EOF',
    '<<<',
    '>',
    '2>&1',
    'echo',
    'héllo ✓',
    'done',
  ];
  const kubectlCommand = fc
    .tuple(
      fc.constantFrom('', 'xargs ', 'xargs -I {} ', 'env A=1 ', 'timeout 5 ', 'A=1 ', 'then ', '! ', 'echo '),
      fc.constantFrom('kubectl', '/bin/kubectl', '"kubectl"'),
      fc.constantFrom('', ' -n ns', ' --context=c', ' -n "$NS"', ' -v'),
      fc.constantFrom(' delete', ' delete', ' get', " 'delete'"),
      fc.array(
        fc.constantFrom(' pods', ' pod/a', ' -l x=y', ` ${FLAG}`, ' --ignore-not-found=false', ' --', ' "a b"', ' $p'),
        {
          maxLength: 3,
        },
      ),
    )
    .map(([prefix, kubectl, global, verb, rest]) => prefix + kubectl + global + verb + rest.join(''));
  const fragment = fc.oneof(
    { weight: 1, arbitrary: kubectlCommand },
    { weight: 2, arbitrary: fc.constantFrom(...noise) },
  );
  const separator = fc.constantFrom(' ', '', '\n', '; ', ' | ', ' && ', '$(', ')');
  const script = fc.array(fc.tuple(fragment, separator), { maxLength: 12 }).map((parts) => parts.flat().join(''));

  const kubectlArgv = fc
    .tuple(
      fc.constantFrom('kubectl', '/usr/bin/kubectl', 'kubectl-x'),
      fc.array(fc.constantFrom('-n', 'ns', '--context=c', '-v', '--insecure-skip-tls-verify'), { maxLength: 3 }),
      fc.constantFrom('delete', 'delete', 'get'),
      fc.array(fc.constantFrom('pods', 'pod/a', '-l', 'x=y', FLAG, '--ignore-not-found=false', '--', 'delete'), {
        maxLength: 4,
      }),
    )
    .map(([kubectl, globals, verb, rest]) => [kubectl, ...globals, verb, ...rest]);
  const execContainer = fc.tuple(kubectlArgv, fc.nat()).map(([argv, n]) => {
    const split = 1 + (n % argv.length);
    return { command: argv.slice(0, split), args: argv.slice(split) };
  });

  const containers: fc.Arbitrary<ContainerCommand> = fc.oneof(
    script.map((text) => ({ command: ['/bin/sh', '-c', text] })),
    script.map((text) => ({ command: ['bash', '-ec'], args: [text] })),
    execContainer,
    kubectlArgv.map((argv) => ({ image: 'bitnami/kubectl:1', args: argv.slice(1) })),
  );
  const RUNS = { numRuns: 2000 };

  /** Everything a rewrite can touch, as one array, for before/after comparison. */
  const argvOf = (container: ContainerCommand, change?: DeleteRewrite): string[] => [
    ...(change?.command ?? container.command ?? []),
    ...(change?.args ?? container.args ?? []),
  ];

  it('is idempotent', () => {
    fc.assert(
      fc.property(containers, (container) => {
        const first = rewrite(container);
        if (first === undefined) return;
        const again = rewrite({
          ...container,
          command: first.command ?? container.command,
          args: first.args ?? container.args,
        });
        expect(again).toBeUndefined();
      }),
      RUNS,
    );
  });

  it('only inserts --ignore-not-found, once per reported change', () => {
    const withoutFlag = (text: string): string => text.replaceAll(` ${FLAG}`, '');
    fc.assert(
      fc.property(containers, (container) => {
        const change = rewrite(container);
        if (change === undefined) return;
        const before = argvOf(container);
        const after = argvOf(container, change);
        expect(change.changes.length).toBeGreaterThan(0);
        if (after.length === before.length) {
          // shell form: exactly one element changed, by inserting " --ignore-not-found" per change
          const changed = after.flatMap((element, i) => (element === before[i] ? [] : [i]));
          expect(changed).toHaveLength(1);
          const i = changed[0]!;
          expect(withoutFlag(after[i]!)).toBe(withoutFlag(before[i]!));
          expect(after[i]!.length - before[i]!.length).toBe(change.changes.length * ` ${FLAG}`.length);
        } else {
          // exec form: one extra FLAG element
          expect(change.changes).toHaveLength(1);
          expect(after.length).toBe(before.length + 1);
          const i = after.findIndex((element, index) => element !== before[index]);
          expect(after[i]).toBe(FLAG);
          expect(after.toSpliced(i, 1)).toEqual(before);
        }
      }),
      RUNS,
    );
  });

  it('never changes a script that does not mention kubectl', () => {
    const withoutKubectl = fc.constantFrom(...noise.filter((token) => token !== 'kubectl'));
    const noKubectlScript = fc
      .array(fc.tuple(withoutKubectl, separator), { maxLength: 30 })
      .map((parts) => parts.flat().join(''));
    fc.assert(
      fc.property(noKubectlScript, (text) => {
        expect(rewriteScript(text)).toBeUndefined();
      }),
      RUNS,
    );
  });

  it('never throws on arbitrary strings', () => {
    fc.assert(
      fc.property(
        fc.string({ maxLength: 200 }),
        fc.array(fc.string({ maxLength: 20 }), { maxLength: 6 }),
        (text, args) => {
          rewrite({ command: ['sh', '-c', `kubectl delete ${text}`] });
          rewrite({ command: ['kubectl', ...args] });
        },
      ),
      RUNS,
    );
  });
});

describe('work linear in the script', () => {
  // Counted, not timed: the characters String.prototype.slice copies while the script is scanned and rewritten.
  // Rebuilding the whole script once per insertion copied (deletes x length) of them: 8x the script, 64x the work.
  const charactersSliced = (script: string): number => countSliced(() => expect(rewriteScript(script)).toBeDefined());

  it('8x the deletes in a script copy at most ~10x the characters', () => {
    const small = charactersSliced('kubectl delete x;'.repeat(1_000));
    const large = charactersSliced('kubectl delete x;'.repeat(8_000));
    expect(large / small).toBeLessThanOrEqual(10);
  });

  it('inserts every flag of a long script, in place', () => {
    const rewritten = rewriteScript('kubectl delete x;'.repeat(40_000));
    expect(rewritten).toBe(`kubectl delete ${FLAG} x;`.repeat(40_000));
  });
});

describe('nesting bound', () => {
  it('follows kubectl delete through a few levels of substitution', () => {
    const script = `echo $(echo $(echo \`kubectl delete cm x\`))`;
    expect(rewrite({ command: ['sh', '-c', script] })?.command).toEqual([
      'sh',
      '-c',
      'echo $(echo $(echo `kubectl delete --ignore-not-found cm x`))',
    ]);
  });

  it('leaves a script nested beyond the bound exactly as written, without exhausting the stack', () => {
    const script = `kubectl delete cm x; echo ${'$('.repeat(200_000)}`;
    expect(rewrite({ command: ['sh', '-c', script] })).toBeUndefined();
  });
});
