// Shell safety, as a property: hook Jobs whose container commands and args hold quotes, $(…), backticks, newlines,
// globs and non-ASCII go through every mutation hookguard makes (as Helm and as Argo CD on an affected version),
// and each container runs in a real /bin/sh, before and after, against a fake kubectl that records its argv. The
// meaning must be unchanged: same exit status, same stdout, same kubectl calls, apart from --ignore-not-found added
// to kubectl delete. (test/unit/kubectl-delete.shell.test.ts runs hand-picked scripts through the rewrite alone.)
import fc from 'fast-check';
import { applyPatch } from '../../src/core/json-patch.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decisionContext } from '../../src/config/decision-context.js';
import { loadConfig } from '../../src/config/load.js';
import { withNamespaces, type DecisionContext } from '../../src/core/context.js';
import { decide } from '../../src/core/decide.js';
import type { Stage } from '../../src/core/rule.js';
import type { AdmissionRequest, Container, KubeObject } from '../../src/core/types.js';
import { argvOf, createSandbox, type Sandbox } from '../support/fake-kubectl.js';
import { GUARD_CONTAINER_NAME } from '../../src/rules/min-runtime.js';
import { ARGOCD_CONTROLLER } from '../support/objects.js';
import { admissionReview } from '../support/reviews.js';

const FLAG = '--ignore-not-found';

// Pieces of scripts: shell syntax that must keep its meaning, and kubectl calls (deletes among them).
const SCRIPT_PIECES = [
  `echo "it's \\"quoted\\" and 'single'"`,
  `echo '$(not expanded) \`nor this\`'`,
  `echo "$(printf '%s|' a 'b c')"`,
  'echo `echo back tick`',
  'echo *.txt [ab].txt ?.md',
  "printf 'héllo ✓ 日本語 ümlaut\\n'",
  'echo "multi\nline string"',
  'echo $((6 * 7)) ${UNSET_VARIABLE:-default}',
  'kubectl delete pod x',
  'kubectl -n \'my ns\' delete configmap "a b"',
  "kubectl delete cm 'it'\"'\"'s'",
  'kubectl delete pod "$(echo from-substitution)"',
  'kubectl get pods -o name | xargs kubectl delete',
  'x=$(kubectl delete pod y); echo "got [$x]"',
  'for p in $(kubectl get po -o name); do kubectl delete "$p" --wait=false; done',
  'true && kubectl delete job j || echo failed',
  'kubectl scale deploy d --replicas=0',
  '# kubectl delete pod commented-out',
  "echo 'kubectl delete just-text'",
  'kubectl delete `echo pod` z',
];
const SEPARATORS = ['\n', '; ', ' && ', '\n\n'];

// Quotes where a scanner that loses its place would land the flag inside a string (issue 22): quotes and expansions
// inside ${…}, $' inside double quotes (a dollar sign, not ANSI-C), $'…' read differently by sh and bash; each
// followed by a string that holds what would be a kubectl delete if the string had ended early.
const quoteTrap = fc
  .tuple(
    fc.constantFrom(
      "${x:-'}'}",
      '${x:-"}"}',
      '${x:-\\}}',
      '${x:-$(echo })}',
      `"\${x:-'}'}"`,
      '"${x:-"}"}"',
      `"$'"`,
      `"$'" ''`,
      "$'}'",
      "$'\\''",
      "''",
    ),
    fc.constantFrom("'", '"'),
    fc.constantFrom(
      ';kubectl delete pod x',
      '; kubectl delete pod x; ',
      '\nkubectl delete pod x\n',
      '}; kubectl delete pod x',
    ),
  )
  .map(([opener, quote, inside]) => `echo ${opener} ${quote}${inside}${quote}`);

// A script's own kubectl: a function (sh and bash spellings) or an alias. Its calls never reach the real one.
const ownKubectl = fc.constantFrom(
  'kubectl() { echo "own kubectl: $*"; }',
  'kubectl () { echo "own kubectl: $*"; }',
  'function kubectl { echo "own kubectl: $*"; }',
  "alias kubectl='echo aliased'",
);

const script = fc
  .tuple(
    fc.array(
      fc.oneof(
        { arbitrary: fc.constantFrom(...SCRIPT_PIECES), weight: 6 },
        { arbitrary: quoteTrap, weight: 2 },
        { arbitrary: ownKubectl, weight: 1 },
      ),
      { minLength: 1, maxLength: 6 },
    ),
    fc.constantFrom(...SEPARATORS),
  )
  .map(([pieces, separator]) => pieces.join(separator));

// Exec-form words: no shell reads them, so anything is literal, including what would be syntax in a shell.
const word = fc.oneof(
  fc.constantFrom(
    'delete',
    'get',
    'pod',
    'cm',
    '-n',
    'my ns',
    '$(rm -rf /)',
    '`id`',
    '*',
    "it's",
    '"q"',
    'a\nb',
    'ümlaut ✓',
    '--',
    '-l',
    'a=b',
  ),
  fc.string({ unit: 'grapheme', maxLength: 12 }).filter((text) => !text.includes('\0')),
);
const execArgs = fc.array(word, { maxLength: 6 }).map((words) => ['delete', ...words]);

const container: fc.Arbitrary<Container> = fc.oneof(
  script.map((text) => ({ command: ['/bin/sh', '-c', text] })),
  script.map((text) => ({ command: ['/bin/sh', '-c'], args: [text] })),
  script.map((text) => ({ command: ['sh', '-ec', `${text}\ntrue`] })),
  script.map((text) => ({ command: ['bash', '-c', text] })),
  execArgs.map((args) => ({ command: ['kubectl'], args })),
  execArgs.map((args) => ({ image: 'bitnami/kubectl:1.31', args })),
  fc.array(word, { minLength: 1, maxLength: 4 }).map((words) => ({ command: ['echo', ...words] })),
);

const job = fc
  .record({
    containers: fc.array(container, { minLength: 1, maxLength: 2 }),
    hook: fc.constantFrom('post-delete', 'pre-delete', 'pre-install'),
    argocd: fc.boolean(),
    resources: fc.constantFrom(undefined, { requests: { cpu: '10m' }, limits: { cpu: '100m', memory: '64Mi' } }),
  })
  .map(({ containers, hook, argocd, resources }): KubeObject => ({
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: 'hook',
      namespace: 'apps',
      annotations: argocd ? { 'argocd.argoproj.io/hook': 'PreSync' } : { 'helm.sh/hook': hook },
    },
    spec: {
      backoffLimit: 0,
      template: {
        spec: {
          restartPolicy: 'Never',
          containers: containers.map((entry, index) => ({
            name: `c${index}`,
            image: 'alpine:3.20',
            ...(resources ? { resources } : {}),
            ...entry,
          })),
        },
      },
    },
  }));

let sandbox: Sandbox;
beforeAll(() => {
  sandbox = createSandbox();
});
afterAll(() => sandbox.remove());

// At admission (the webhooks) and at render time (check, the Helm post-renderer, the Argo CD plugin), every
// mutation runs: the Argo CD race guards of 2.14.3, the deadline (opted in: by default none is set), and (excluded
// from Istio injection the namespace asks for) the mesh-sidecar label on the pod template.
const ISTIO_NAMESPACE = new Map([
  ['apps', { name: 'apps', labels: { 'istio-injection': 'enabled' }, annotations: {} }],
]);
const contexts = Object.fromEntries(
  (['admission', 'render'] as const).map((stage) => [
    stage,
    withNamespaces(
      decisionContext(
        loadConfig({
          overrides: {
            'rules.meshSidecar.action': 'exclude',
            'rules.hookDeadline.activeDeadlineSeconds': '3600',
            'rules.hookDeadline.parallelJobs': 'true',
          },
        }),
        '2.14.3',
        stage,
      ),
      ISTIO_NAMESPACE,
    ),
  ]),
) as Record<Stage, DecisionContext>;
const withoutFlag = (calls: string[][]) => calls.map((call) => call.filter((arg) => arg !== FLAG));
const containersOf = (object: KubeObject) =>
  (object.spec as { template: { spec: { containers: Container[] } } }).template.spec.containers;
const initContainersOf = (object: KubeObject) =>
  (object.spec as { template: { spec: { initContainers?: Container[] } } }).template.spec.initContainers ?? [];

describe('container commands keep their meaning through every mutation', () => {
  it('same exit status, stdout and kubectl calls in a real shell, deletes only gaining --ignore-not-found', () => {
    let deletesSeen = 0;
    let guardsSeen = 0;
    fc.assert(
      fc.property(
        job,
        fc.constantFrom('kubernetes-admin', ARGOCD_CONTROLLER),
        fc.constantFrom('admission', 'render') satisfies fc.Arbitrary<Stage>,
        (object, username, stage) => {
          const request = (
            admissionReview({ uid: 'uid', operation: 'CREATE', object, username }) as { request: AdmissionRequest }
          ).request;
          const decision = decide(request, 'mutate', contexts[stage]);
          expect(decision.allowed).toBe(true);
          expect(
            decision.findings.filter((finding) => finding.action === 'mutate').map((finding) => finding.rule),
          ).toEqual(expect.arrayContaining(['hook-deadline', 'mesh-sidecar']));
          const stored = applyPatch(structuredClone(object), decision.patch, true, false).newDocument;
          // The guard, where one is added, is the only init container and runs exec form: no shell reads it.
          for (const guard of initContainersOf(stored)) {
            expect(guard).toMatchObject({ name: GUARD_CONTAINER_NAME, command: ['/busybox/sleep', '10'] });
            expect(guard.args).toBeUndefined();
            guardsSeen += 1;
          }
          const after = containersOf(stored);
          for (const [index, before] of containersOf(object).entries()) {
            const mutated = after[index] as Container;
            // Only command and args may change, and only by the one flag; besides them, at admission,
            // termination-message-policy turns a container left at the default File to FallbackToLogsOnError, which
            // changes nothing a shell runs.
            const unchanged = { command: undefined, args: undefined, terminationMessagePolicy: undefined };
            expect({ ...mutated, ...unchanged }).toEqual({ ...before, ...unchanged });
            const leftAtDefault = [undefined, 'File'].includes(before.terminationMessagePolicy as string | undefined);
            expect(mutated.terminationMessagePolicy).toBe(
              stage === 'admission' && leftAtDefault ? 'FallbackToLogsOnError' : before.terminationMessagePolicy,
            );
            const original = sandbox.run(argvOf(before), sandbox.present);
            const rewritten = sandbox.run(argvOf(mutated), sandbox.present);
            expect(rewritten.status, rewritten.stderr).toBe(original.status);
            expect(rewritten.stdout.toString('utf8')).toBe(original.stdout.toString('utf8'));
            expect(withoutFlag(rewritten.calls)).toEqual(withoutFlag(original.calls));
            const flagged = rewritten.calls.filter((call) => call.includes(FLAG)).length;
            const deletes = rewritten.calls.filter((call) => call.includes('delete')).length;
            // A flag is only ever added to a kubectl delete (the fake logs kubectl calls only).
            expect(flagged).toBeLessThanOrEqual(deletes);
            deletesSeen += deletes;
          }
        },
      ),
      { numRuns: 60 },
    );
    // The generators do reach kubectl delete and the guard: the property is not vacuous.
    expect(deletesSeen).toBeGreaterThan(20);
    expect(guardsSeen).toBeGreaterThan(10);
  });
});
