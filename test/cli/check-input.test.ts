// What `hookguard check` reads, and how --fix writes it back, against oracles nobody here wrote: the real kubectl
// (test/support/k8s-tools.ts) reads each manifest and each --fix output, and the two must differ by exactly the
// patch hookguard reported; the real filesystem for directories, FIFOs and devices; a real process for the limits.
import { execFile } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { applyPatch } from '../../src/core/json-patch.js';
import type { KubeObject, Operation } from '../../src/core/types.js';
import { runCommand } from '../support/command.js';
import { haveSharedFixtures, sharedFixturesDir } from '../support/fixtures.js';
import { helmAndKubectl } from '../support/k8s-tools.js';

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
  if (!haveSharedFixtures) return [];
  return readdirSync(sharedFixturesDir)
    .filter((name) => name.endsWith('.yaml'))
    .sort()
    .map((name) => readFileSync(join(sharedFixturesDir, name), 'utf8'));
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
    'every shared fixture and the hand-made manifests, %s',
    async (_name, flags) => {
      const json = await runCommand(['check', '-', '--output', 'json', ...flags], stream);
      expect(json.stderr).toBe('');
      const { results } = JSON.parse(json.stdout) as { results: { patch: Operation[]; name: string }[] };
      const fixed = await runCommand(['check', '-', '--fix', ...flags], stream);
      expect(fixed.status).toBe(json.status);

      const before = await kubectlReads(kubectl, stream, 'before.yaml');
      const after = await kubectlReads(kubectl, fixed.stdout, 'after.yaml');
      expect(before).toHaveLength(results.length);
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

  it.skipIf(!haveSharedFixtures)(
    'rancher: only the deadline is added; defaultMode 0777 stays, read as 511',
    async () => {
      const rancher = readFileSync(join(sharedFixturesDir, 'rancher-pre-upgrade.yaml'), 'utf8');
      const fixed = await runCommand(['check', '-', '--fix'], rancher);
      expect(fixed.stdout).toBe(`${rancher}  activeDeadlineSeconds: 3600\n`);
      const [job] = await kubectlReads(kubectl, fixed.stdout, 'rancher.yaml');
      expect(job?.spec).toMatchObject({ template: { spec: { volumes: [{ configMap: { defaultMode: 511 } }] } } });
    },
  );
});
