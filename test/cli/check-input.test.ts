// What `hookguard check` reads, and how --fix writes it back, against oracles nobody here wrote: the real kubectl
// (test/support/k8s-tools.ts) reads each manifest and each --fix output, and the two must differ by exactly the
// patch hookguard reported; the real filesystem for directories, FIFOs and devices; a real process for the limits.
import { execFile, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { applyPatch } from '../../src/core/json-patch.js';
import type { KubeObject, Operation } from '../../src/core/types.js';
import { readDocuments } from '../../src/offline/read.js';
import { runCli } from '../support/cli.js';
import { runCommand } from '../support/command.js';
import { fixtureFiles, fixtureText } from '../support/fixtures.js';
import { helmAndKubectl, repoRoot } from '../support/k8s-tools.js';

const execFileAsync = promisify(execFile);
const dir = mkdtempSync(join(tmpdir(), 'hookguard-check-input-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A Helm hook whose hook annotation only a merge key brings, with octal modes and YAML 1.1 booleans. */
const MERGED_HOOK = `# hand-made: what YAML 1.1 means here, kubectl reads
apiVersion: batch/v1
kind: Job
metadata:
  name: migrate
  namespace: apps
  labels: &labels
    app: demo
  annotations:
    <<: {"helm.sh/hook": "pre-install,pre-upgrade"}
    team: platform
spec:
  backoffLimit: 0x0
  template:
    metadata:
      labels: *labels
    spec:
      restartPolicy: Never
      automountServiceAccountToken: no
      securityContext: {runAsNonRoot: yes}
      containers:
        - name: main
          image: bitnami/kubectl:1.34
          securityContext:
            readOnlyRootFilesystem: on
          command:
            - sh
            - -c
            - |
              kubectl delete configmap lock
              echo done
          volumeMounts:
            - {name: scripts, mountPath: /scripts}
      volumes:
        - name: scripts
          configMap:
            name: scripts
            defaultMode: 0777
            items:
              - {key: run.sh, path: run.sh, mode: 0400}
              - key: lib.sh
                path: lib.sh
                mode: 0o644
`;

/** What \`kubectl get jobs -o yaml\` prints, the second Job's metadata and pod spec aliases of the first's. */
const JOB_LIST = `apiVersion: batch/v1
kind: JobList
items:
  - apiVersion: batch/v1
    kind: Job
    metadata: {name: first, namespace: apps, annotations: &hook {argocd.argoproj.io/hook: PreSync}}
    spec:
      template:
        spec: &pod
          restartPolicy: Never
          containers: [{name: main, image: "alpine:3.20", command: ["true"]}]
  - apiVersion: batch/v1
    kind: Job
    metadata: {name: second, namespace: apps, annotations: *hook}
    spec:
      template:
        spec: *pod
`;

/** A test hook Pod written in flow style throughout. */
const FLOW_POD = `{apiVersion: v1, kind: Pod, metadata: {name: probe, namespace: apps, annotations: {helm.sh/hook: test}},
 spec: {restartPolicy: Never, containers: [{name: t, image: "busybox:1.37", command: [sh, -c, "kubectl delete pod x"]}]}}
`;

const HANDMADE = [MERGED_HOOK, JOB_LIST, FLOW_POD];

function fixtureTexts(): string[] {
  return fixtureFiles().map(fixtureText);
}

/** The objects the real kubectl reads from a stream (a List flattened into its items), its own annotation removed. */
async function kubectlReads(kubectl: string, text: string, name: string): Promise<KubeObject[]> {
  const file = join(dir, name);
  writeFileSync(file, text);
  const { stdout } = await execFileAsync(
    kubectl,
    ['annotate', '--local', '-f', file, 'hookguard-oracle=read', '-o', 'json'],
    {
      maxBuffer: 64 * 1024 * 1024,
    },
  );
  // One pretty-printed JSON object after another, each starting a line with `{`.
  const objects = stdout
    .split(/\n(?=\{\n)/)
    .map((text) => JSON.parse(text) as KubeObject)
    .flatMap((read) => (read.kind === 'List' ? (read.items as KubeObject[]) : [read]));
  for (const object of objects) {
    const metadata = object.metadata as { annotations: Record<string, string> };
    delete metadata.annotations['hookguard-oracle'];
    if (Object.keys(metadata.annotations).length === 0) delete (metadata as { annotations?: unknown }).annotations;
  }
  return objects;
}

describe('--fix changes exactly what the patch says, as the real kubectl reads it', () => {
  let kubectl: string;
  beforeAll(async () => {
    kubectl = (await helmAndKubectl()).kubectl;
  }, 120_000);

  const stream = [...fixtureTexts(), ...HANDMADE].join('---\n');

  it.each<[string, string[]]>([
    ['applied by Helm', []],
    ['applied by Argo CD 3.1.0', ['--argocd-version', '3.1.0']],
  ])(
    'every chart fixture and the hand-made manifests, %s',
    async (_name, flags) => {
      const json = await runCommand(['check', '-', '--output', 'json', ...flags], stream);
      expect(json.stderr).toBe('');
      const { results } = JSON.parse(json.stdout) as { results: { patch: Operation[]; name: string }[] };
      const fixed = await runCommand(['check', '-', '--fix', ...flags], stream);
      expect(fixed.status).toBe(json.status);

      const before = await kubectlReads(kubectl, stream, 'before.yaml');
      const after = await kubectlReads(kubectl, fixed.stdout, 'after.yaml');
      // hookguard read each object as kubectl did, and --fix wrote what kubectl reads as each object patched.
      expect(readDocuments(stream, '-').flatMap((document) => document.objects.map(({ object }) => object))).toEqual(
        before,
      );
      expect(after).toEqual(
        before.map(
          (object, index) => applyPatch(structuredClone(object), results[index]?.patch ?? [], true, false).newDocument,
        ),
      );
      // It did patch, the hook a merge key names included; what it did not patch kept its text.
      const merged = results.find((result) => result.name === 'migrate');
      expect(merged?.patch.length).toBeGreaterThan(0);
      expect(fixed.stdout).toContain('            defaultMode: 0777\n');
      expect(fixed.stdout).toContain('              - {key: run.sh, path: run.sh, mode: 0400}\n');
      expect(fixed.stdout).toContain('    <<: {"helm.sh/hook": "pre-install,pre-upgrade"}\n');
      expect(fixed.stdout).toContain('              kubectl delete --ignore-not-found configmap lock\n');
    },
    60_000,
  );

  // What the Argo CD plugin's generate runs (manifests/argocd-cmp/plugin.yaml): helm template piped into check --fix.
  it('helm template of a chart written in YAML 1.1, through check --fix, as the real helm and kubectl read it', async () => {
    const { helm } = await helmAndKubectl();
    const rendered = await execFileAsync(helm, [
      'template',
      'rel',
      join(repoRoot, 'test', 'e2e', 'yaml11-chart'),
      '-n',
      'demo',
    ]);
    const json = await runCommand(['check', '-', '-o', 'json'], rendered.stdout);
    const { results } = JSON.parse(json.stdout) as { results: { name: string; patch: Operation[] }[] };
    const fixed = await runCommand(['check', '-', '--fix'], rendered.stdout);
    expect(fixed.status).toBe(0);
    const before = await kubectlReads(kubectl, rendered.stdout, 'rendered.yaml');
    expect(
      readDocuments(rendered.stdout, '-').flatMap((document) => document.objects.map(({ object }) => object)),
    ).toEqual(before);
    expect(await kubectlReads(kubectl, fixed.stdout, 'rendered-fixed.yaml')).toEqual(
      before.map(
        (object, index) => applyPatch(structuredClone(object), results[index]?.patch ?? [], true, false).newDocument,
      ),
    );
    // The hook is seen through its merge key; what the user reads differs from helm's output by four lines.
    expect(results.map((result) => [result.name, result.patch.map((operation) => operation.path)])).toEqual([
      ['rel-scripts', []],
      [
        'rel-migrate',
        [
          '/spec/template/spec/containers/0/command/2',
          '/spec/ttlSecondsAfterFinished',
          '/metadata/annotations/helm.sh~1hook-delete-policy',
          '/metadata/annotations/helm.sh~1hook-output-log-policy',
        ],
      ],
    ]);
    expect(fixed.stdout).toBe(
      rendered.stdout
        .replace(
          '    <<: {"helm.sh/hook": "pre-install,pre-upgrade"}\n',
          '    <<: {"helm.sh/hook": "pre-install,pre-upgrade"}\n    helm.sh/hook-delete-policy: before-hook-creation\n    helm.sh/hook-output-log-policy: hook-failed\n',
        )
        .replace('kubectl delete configmap rel-lock', 'kubectl delete --ignore-not-found configmap rel-lock')
        .replace(
          '              - {key: migrate.sh, path: migrate.sh, mode: 0400}\n',
          '              - {key: migrate.sh, path: migrate.sh, mode: 0400}\n  ttlSecondsAfterFinished: 86400\n',
        ),
    );
  });

  it('rancher: only the output log policy is added; defaultMode 0777 stays, read as 511', async () => {
    const rancher = fixtureText('rancher-pre-upgrade.yaml');
    const fixed = await runCommand(['check', '-', '--fix'], rancher);
    const policy = '    "helm.sh/hook-delete-policy": before-hook-creation,hook-succeeded\n';
    expect(fixed.stdout).toBe(rancher.replace(policy, `${policy}    helm.sh/hook-output-log-policy: hook-failed\n`));
    const [job] = await kubectlReads(kubectl, fixed.stdout, 'rancher.yaml');
    expect(job?.spec).toMatchObject({ template: { spec: { volumes: [{ configMap: { defaultMode: 511 } }] } } });
  });
});

const CONFIGMAP = 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\n';

describe('inputs hookguard check understands', () => {
  it('a directory: its *.yaml, *.yml and *.json files, recursively, in code-point order, hidden ones skipped', async () => {
    const root = join(dir, 'chart');
    for (const sub of ['templates/b', 'templates/.cache', '.git']) mkdirSync(join(root, sub), { recursive: true });
    const files = {
      'templates/b/z.yaml': CONFIGMAP.replace('settings', 'z'),
      'templates/B.yml': CONFIGMAP.replace('settings', 'upper-b'),
      'templates/a.json': JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'a' } }),
      'templates/.hidden.yaml': CONFIGMAP.replace('settings', 'hidden'),
      'templates/.cache/x.yaml': CONFIGMAP.replace('settings', 'cached'),
      '.git/y.yaml': CONFIGMAP.replace('settings', 'git'),
      'templates/NOTES.txt': 'not a manifest',
      'values.yaml': CONFIGMAP.replace('settings', 'values'),
    };
    for (const [path, text] of Object.entries(files)) writeFileSync(join(root, path), text);
    const run = await runCommand(['check', root, '--output', 'json']);
    expect(run.status).toBe(0);
    const { results } = JSON.parse(run.stdout) as { results: { name: string; source: { file: string } }[] };
    expect(results.map((result) => [result.name, result.source.file])).toEqual([
      ['upper-b', join(root, 'templates/B.yml')],
      ['a', join(root, 'templates/a.json')],
      ['z', join(root, 'templates/b/z.yaml')],
      ['values', join(root, 'values.yaml')],
    ]);
    // --fix prints every file's documents, one after the other.
    const fixed = await runCommand(['check', root, '--fix']);
    expect(fixed.stdout).toBe(
      `${files['templates/B.yml']}---\n${files['templates/a.json']}\n---\n${files['templates/b/z.yaml']}---\n${files['values.yaml']}`,
    );
  });

  it("a List's items are the objects, each traced to its item", async () => {
    const run = await runCommand(
      ['check', '-', '--output', 'json', '--argocd-version', '3.1.0'],
      `# jobs\n${JOB_LIST}`,
    );
    const { results } = JSON.parse(run.stdout) as { results: { name: string; source: unknown; patch: unknown[] }[] };
    expect(results.map((result) => [result.name, result.source])).toEqual([
      ['first', { file: '-', document: 1, line: 1, firstLine: '# jobs', item: 1 }],
      ['second', { file: '-', document: 1, line: 1, firstLine: '# jobs', item: 2 }],
    ]);
    expect(results.every((result) => result.patch.length > 0)).toBe(true);
  });

  it.each([
    ['nothing', ''],
    ['only comments and empty documents', '# rendered nothing\n---\n---\n'],
    ['an empty List', 'apiVersion: v1\nkind: List\nitems: []\n'],
  ])('%s: says no object was found (exit 2); --fix passes it through and says so on stderr', async (_name, input) => {
    const run = await runCommand(['check', '-'], input);
    expect(run).toEqual({
      status: 2,
      stdout: '',
      stderr: 'hookguard check: no Kubernetes object found in standard input\n',
    });
    const fixed = await runCommand(['check', '-', '--fix'], input);
    expect(fixed).toEqual({
      status: 0,
      stdout: input === '' || input.endsWith('\n') ? input : `${input}\n`,
      stderr: 'hookguard check: no Kubernetes object found in standard input\n',
    });
  });

  it('a hook Job or Pod no rule judges gets a finding that says why; a hook that runs nothing gets none', async () => {
    const hooks = [
      'apiVersion: batch/v1beta1\nkind: Job\nmetadata:\n  name: old\n  namespace: apps\n  annotations:\n    helm.sh/hook: pre-install\n',
      'apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: sa\n  annotations:\n    argocd.argoproj.io/hook: PreSync\n',
      'apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: sys\n  namespace: kube-system\n  annotations:\n    helm.sh/hook: post-install\nspec: {}\n',
      CONFIGMAP,
    ].join('---\n');
    const run = await runCommand(['check', '-', '--output', 'json'], hooks);
    expect(run.status).toBe(0);
    const { results } = JSON.parse(run.stdout) as { results: { findings: unknown[] }[] };
    expect(results.map((result) => result.findings)).toEqual([
      [
        {
          rule: 'not-judged',
          action: 'warn',
          message:
            'Job apps/old is a Helm hook (helm.sh/hook: pre-install) of which hookguard judged only the delete policy: hookguard judges hook Jobs of batch/v1 and Pods of v1, and this Job is batch/v1beta1',
        },
      ],
      // A hook of a kind that runs nothing is no Job or Pod left unjudged: no finding (issue 42 item 6).
      [],
      [
        {
          rule: 'not-judged',
          action: 'warn',
          message:
            'Job kube-system/sys is a Helm hook (helm.sh/hook: post-install) that no rule judged: its namespace is in excludedNamespaces',
        },
      ],
      [],
    ]);
  });
});

describe('hostile input', () => {
  it('refuses a FIFO and a device at once instead of waiting on them', async () => {
    const fifo = join(dir, 'fifo.yaml');
    expect(spawnSync('mkfifo', [fifo]).status).toBe(0);
    expect(await runCommand(['check', fifo])).toEqual({
      status: 2,
      stdout: '',
      stderr: `hookguard check: cannot read ${fifo}: it is a FIFO; check reads files and directories, and standard input as -\n`,
    });
    expect((await runCommand(['check', '/dev/zero'])).stderr).toBe(
      'hookguard check: cannot read /dev/zero: it is a device; check reads files and directories, and standard input as -\n',
    );
  });

  it('refuses input over check.maxInputBytes, a file before reading it and standard input as it comes', async () => {
    const big = join(dir, 'big.yaml');
    writeFileSync(big, `${CONFIGMAP}data:\n  x: "${'x'.repeat(2000)}"\n`);
    expect((await runCommand(['check', big, '--max-input-bytes', '1024'])).stderr).toBe(
      `hookguard check: ${big}: the input is larger than 1024 bytes (check.maxInputBytes); raise it with --max-input-bytes\n`,
    );
    expect((await runCommand(['check', big, '--max-input-bytes', '4096'])).status).toBe(0);
    const piped = runCli(['check', '-'], 'x'.repeat(2048), { HOOKGUARD_CHECK_MAX_INPUT_BYTES: '1024' });
    expect(piped).toEqual({
      status: 2,
      stdout: '',
      stderr:
        'hookguard check: standard input: the input is larger than 1024 bytes (check.maxInputBytes); raise it with --max-input-bytes\n',
    });
  });

  it('a billion laughs exits 2 with a message, in a real process', () => {
    const levels = [
      'apiVersion: v1',
      'kind: ConfigMap',
      'metadata: {name: lol}',
      'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
    ];
    for (let level = 1; level < 9; level++) {
      const name = String.fromCharCode(97 + level);
      levels.push(
        `${name}: &${name} [${Array(9)
          .fill(`*${String.fromCharCode(96 + level)}`)
          .join(',')}]`,
      );
    }
    const run = runCli(['check', '-'], `${levels.join('\n')}\n`);
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(/^hookguard check: stdin document 1, line \d+: document contains excessive aliasing \(/);
  });

  // Counted, not timed: the elements the array searches and walks (some, every, find, findIndex, forEach, map,
  // filter, reduce: callbacks run; indexOf, includes: elements scanned) while the text is read. A pairwise duplicate
  // key check (yaml's `uniqueKeys`, which scans the pairs so far with `some` for each new key) made 8x the keys 64x
  // that work (100,000 keys: over 120 s); linear reading makes it about 8x.
  function elementsVisited(read: () => void): number {
    let visited = 0;
    const spies = (['some', 'every', 'find', 'findIndex', 'forEach', 'map', 'filter', 'reduce'] as const).map(
      (name) => {
        const original = Array.prototype[name] as (this: unknown[], ...args: unknown[]) => unknown;
        return vi.spyOn(Array.prototype, name).mockImplementation(function (
          this: unknown[],
          callback: unknown,
          ...rest: unknown[]
        ) {
          const counted = (...args: unknown[]) => {
            visited++;
            return (callback as (...args: unknown[]) => unknown)(...args);
          };
          return original.call(this, counted, ...rest);
        } as never);
      },
    );
    for (const name of ['indexOf', 'includes'] as const) {
      const original = Array.prototype[name] as (this: unknown[], ...args: unknown[]) => unknown;
      spies.push(
        vi.spyOn(Array.prototype, name).mockImplementation(function (this: unknown[], ...args: unknown[]) {
          visited += this.length;
          return original.apply(this, args);
        } as never),
      );
    }
    try {
      read();
    } finally {
      for (const spy of spies) spy.mockRestore();
    }
    return visited;
  }

  it('refuses a scalar longer than check.maxScalarBytes before reading its value', () => {
    const text = `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata:\n  key: "${'x'.repeat(2000)}"\n`;
    const run = runCli(['check', '-'], text, { HOOKGUARD_CHECK_MAX_SCALAR_BYTES: '1024' });
    expect(run.stderr).toBe(
      'hookguard check: stdin document 1, line 5: a scalar of 2002 characters is longer than 1024 bytes (check.maxScalarBytes); Kubernetes stores no object that large (the API server refuses a request body over 3 MiB, etcd a value over 1.5 MiB)\n',
    );
    expect(run.status).toBe(2);
  });

  it('reads a mapping of 20,000 keys with work linear in its size', () => {
    const mapping = (keys: number): string =>
      `apiVersion: v1\nkind: ConfigMap\nmetadata: {name: big}\ndata:\n${Array.from({ length: keys }, (_, index) => `  k${index}: v\n`).join('')}`;
    const small = elementsVisited(() => readDocuments(mapping(2_500), '-'));
    const large = elementsVisited(() => readDocuments(mapping(20_000), '-'));
    expect(small).toBeGreaterThan(2_500);
    console.log(`elements visited: 2,500 keys ${small}, 20,000 keys ${large}`);
    expect(large / small).toBeLessThan(10);
  });
});
