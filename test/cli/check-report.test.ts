// What `hookguard check` prints for people and for CI: -o github's workflow commands, escaped as GitHub's toolkit
// escapes them; names and paths from the manifests shown with their control characters escaped (a forged summary
// line stays on the line it came in); audit mode summed as it acts; the Helm assumed when none was named; the flags
// README lists; directories that hold a chart or a symbolic link out of them.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { CHECK_OPTIONS } from '../../src/cli/check.js';
import { escapeData, escapeProperty } from '../../src/report/github.js';
import { runCommand } from '../support/command.js';
import { helmAndKubectl, repoRoot } from '../support/k8s-tools.js';
import { hookJobText, OPTED_OUT_JOB } from '../support/manifests-text.js';

const dir = mkdtempSync(join(tmpdir(), 'hookguard-check-report-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const RENDERED = `---\n# Source: app/templates/job.yaml\n${OPTED_OUT_JOB}`;
const RACE =
  'races with Argo CD 3.1.0 (argocd-fast-hook-finalizer-race: a hook Job that finishes before Argo CD observes it keeps the hook finalizer and the sync never ends): min-runtime opted out with hookguard.io/skip. Fix: remove min-runtime from hookguard.io/skip, or upgrade to Argo CD 3.4.0, which fixed the race.';
const DEADLINE = 'no spec.activeDeadlineSeconds: if its Pod never starts, this hook waits forever';

const HELM_POD = `apiVersion: v1
kind: Pod
metadata:
  name: hookpod
  namespace: demo
  annotations:
    helm.sh/hook: pre-install
spec:
  restartPolicy: Never
  containers:
    - name: main
      image: alpine:3.20
`;

describe('hookguard check -o github', () => {
  it("escapes as @actions/core's escapeData and escapeProperty", () => {
    expect(escapeData('100% done\r\nnext: a,b')).toBe('100%25 done%0D%0Anext: a,b');
    expect(escapeProperty('100% done\r\nnext: a,b')).toBe('100%25 done%0D%0Anext%3A a%2Cb');
  });

  it('writes one workflow command per finding at the template the chart root names, then the summary', async () => {
    const run = await runCommand(
      ['check', '-', '--argocd-version', '3.1.0', '--chart-root', 'charts/app', '-o', 'github'],
      RENDERED,
    );
    expect(run.status).toBe(1);
    expect(run.stderr).toBe('');
    const at = 'file=charts/app/templates/job.yaml,line=1';
    expect(run.stdout).toBe(
      [
        `::notice ${at},title=hookguard delete-policy::Job apps/fast: set argocd.argoproj.io/hook-delete-policy: BeforeHookCreation,HookSucceeded: a succeeded hook is deleted at once instead of staying until its next run%0Arendered at stdin:2`,
        `::warning ${at},title=hookguard hook-deadline::Job apps/fast: ${DEADLINE}%0Arendered at stdin:2`,
        `::error ${at},title=hookguard version-race (argocd-fast-hook-finalizer-race)::Job apps/fast ${RACE}%0Arendered at stdin:2`,
        'hookguard check: 1 object(s): 1 would be changed, 1 would be denied',
        '',
      ].join('\n'),
    );
  });

  it('points at the file and line it read without a chart root; a denial audit mode does not make is a warning', async () => {
    const run = await runCommand(
      ['check', '-', '--argocd-version', '3.1.0', '--mode', 'audit', '-o', 'github'],
      RENDERED,
    );
    expect(run.status).toBe(0);
    expect(run.stdout.split('\n').at(2)).toBe(
      `::warning file=stdin,line=2,title=hookguard version-race (argocd-fast-hook-finalizer-race)::Job apps/fast ${RACE} (audit mode: denied in enforce mode only)`,
    );
  });
});

describe('names and paths from the manifests are shown escaped', () => {
  // A name no API server would accept, but a manifest can hold: it tries to end its line and print a summary.
  const FORGED = `apiVersion: v1
kind: ConfigMap
metadata:
  name: "x\\n0 object(s): 0 would be changed, 0 would be denied\\e[2K"
`;
  // A file name with every character a workflow command's property must escape, a line break and an escape code.
  const file = join(dir, 'a,b:c%\n\u001b[31m.yaml');
  writeFileSync(file, OPTED_OUT_JOB);

  it('text: a forged line stays on the line it came in', async () => {
    const run = await runCommand(['check', '-'], FORGED);
    expect(run.stdout).toBe(
      [
        'ConfigMap x\\n0 object(s): 0 would be changed, 0 would be denied\\u001b[2K: allowed, unchanged',
        '  at stdin:1 (document 1): apiVersion: v1',
        '1 object(s): 0 would be changed, 0 would be denied',
        '',
      ].join('\n'),
    );
  });

  it('text and --fix: a file name with a line break and an escape code', async () => {
    const shown = join(dir, 'a,b:c%\\n\\u001b[31m.yaml');
    const text = await runCommand(['check', file, '--argocd-version', '3.1.0']);
    expect(text.stdout.split('\n')[1]).toBe(`  at ${shown}:1 (document 1): apiVersion: batch/v1`);
    const fixed = await runCommand(['check', file, '--argocd-version', '3.1.0', '--fix']);
    expect(fixed.stderr).toBe(
      `hookguard check: Job apps/fast denied by version-race: Job apps/fast ${RACE}\n  at ${shown}:1 (document 1): apiVersion: batch/v1\n`,
    );
  });

  it('github: the command cannot be ended early or a second one started', async () => {
    const run = await runCommand(['check', file, '--argocd-version', '3.1.0', '-o', 'github']);
    const property = `${dir.replaceAll(':', '%3A').replaceAll(',', '%2C')}/a%2Cb%3Ac%25\\n\\u001b[31m.yaml`;
    expect(run.stdout.split('\n')[0]).toBe(
      `::notice file=${property},line=1,title=hookguard delete-policy::Job apps/fast: set argocd.argoproj.io/hook-delete-policy: BeforeHookCreation,HookSucceeded: a succeeded hook is deleted at once instead of staying until its next run`,
    );
    const forged = await runCommand(['check', '-', '-o', 'github'], FORGED);
    expect(forged.stdout).toBe('hookguard check: 1 object(s): 0 would be changed, 0 would be denied\n');
  });
});

describe('hookguard check --mode audit', () => {
  it('sums what audit mode withholds, and names the denial enforce mode would make', async () => {
    const run = await runCommand(['check', '-', '--argocd-version', '3.1.0', '--mode', 'audit'], RENDERED);
    expect(run.status).toBe(0);
    expect(run.stdout).toBe(
      [
        'Job apps/fast: allowed in audit mode, DENIED in enforce mode, 1 patch op(s) withheld',
        '  at stdin:2 (document 1): # Source: app/templates/job.yaml',
        '  mutate delete-policy: set argocd.argoproj.io/hook-delete-policy: BeforeHookCreation,HookSucceeded: a succeeded hook is deleted at once instead of staying until its next run',
        `  warn   hook-deadline: ${DEADLINE}`,
        `  deny   version-race [argocd-fast-hook-finalizer-race]: Job apps/fast ${RACE}`,
        '1 object(s): 0 would be changed, 0 would be denied; audit mode withheld 1 change(s) and 1 denial(s) enforce mode would make',
        '',
      ].join('\n'),
    );
  });

  it('--fix prints the input as written, and on stderr what enforce mode would change and deny (exit 0)', async () => {
    const fixed = await runCommand(['check', '-', '--argocd-version', '3.1.0', '--mode', 'audit', '--fix'], RENDERED);
    expect(fixed).toEqual({
      status: 0,
      stdout: RENDERED,
      stderr: [
        'hookguard check: Job apps/fast: audit mode, printed as written; what enforce mode would do:',
        '  at stdin:2 (document 1): # Source: app/templates/job.yaml',
        '  mutate delete-policy: set argocd.argoproj.io/hook-delete-policy: BeforeHookCreation,HookSucceeded: a succeeded hook is deleted at once instead of staying until its next run',
        `  deny   version-race [argocd-fast-hook-finalizer-race]: Job apps/fast ${RACE}`,
        '',
      ].join('\n'),
    });
  });
});

describe('hookguard check --helm-version', () => {
  const UNKNOWN_HELM =
    'set helm.sh/hook-delete-policy: before-hook-creation, without hook-succeeded: the Helm version is unknown and may wait its whole --timeout after that deletion; a Pod has no TTL: the finished Pod stays until before-hook-creation deletes it at the next run';

  it('without one, says which Helm it assumed and what that changed; a bare hook Pod is told what stays of it', async () => {
    const run = await runCommand(['check', '-'], HELM_POD);
    expect(run.stdout).toBe(
      [
        'Pod demo/hookpod: allowed, 2 patch op(s)',
        '  at stdin:1 (document 1): apiVersion: v1',
        `  mutate delete-policy [helm-hook-delete-wait]: ${UNKNOWN_HELM}`,
        `  warn   hook-deadline: ${DEADLINE}`,
        "  mutate hook-output-log-policy: set helm.sh/hook-output-log-policy: hook-failed: Helm prints the hook's logs if it fails",
        '1 object(s): 1 would be changed, 0 would be denied',
        'Helm version unknown: assumed a Helm that helm-hook-delete-wait affect(s), since any Helm may run the hooks; that changed what hookguard does to 1 object(s). Pass --helm-version V (or HOOKGUARD_HELM_VERSION) with the Helm that will run them',
        '',
      ].join('\n'),
    );
  });

  // The newcomer's chart (issue 42): a pre-install Job with a TTL of 5 and a post-delete Job with no delete policy.
  // Every change says why in a clause; the Helm advisories are named as the Argo CD ones are, in [] and in JSON.
  const NEWCOMER = [
    hookJobText('pre', ['helm.sh/hook: pre-install'], ['ttlSecondsAfterFinished: 5', 'activeDeadlineSeconds: 600']),
    hookJobText('cleanup', ['helm.sh/hook: post-delete'], ['activeDeadlineSeconds: 600']),
  ].join('---\n');
  const TTL_WAIT =
    'raised spec.ttlSecondsAfterFinished from 5 to 60: Helm 4 waits until --timeout for a hook Job deleted before it saw the Job finish';
  const NO_SUCCEEDED =
    'set helm.sh/hook-delete-policy: before-hook-creation, without hook-succeeded: the Helm version is unknown and may wait its whole --timeout after that deletion; a TTL removes the finished hook instead';
  const TTL_FIX =
    'set spec.ttlSecondsAfterFinished to 86400: no delete policy removes this Job once it succeeds. Fix in its chart: set spec.ttlSecondsAfterFinished in the template; a hook-succeeded delete policy may leave Helm waiting its whole --timeout';
  const LOG_POLICY = "set helm.sh/hook-output-log-policy: hook-failed: Helm prints the hook's logs if it fails";

  it('names the Helm advisories of its changes as it names the Argo CD ones, and says why each change', async () => {
    const run = await runCommand(['check', '-'], NEWCOMER);
    expect(run.stdout).toBe(
      [
        'Job pre: allowed, 3 patch op(s)',
        '  at stdin:1 (document 1): apiVersion: batch/v1',
        `  mutate delete-policy [helm-hook-delete-wait]: ${NO_SUCCEEDED}`,
        `  mutate ttl-floor [helm-hook-ttl-wait]: ${TTL_WAIT}`,
        `  mutate hook-output-log-policy: ${LOG_POLICY}`,
        'Job cleanup: allowed, 3 patch op(s)',
        '  at stdin:17 (document 2): apiVersion: batch/v1',
        `  mutate delete-policy [helm-hook-delete-wait]: ${NO_SUCCEEDED}`,
        `  mutate hook-ttl [helm-hook-delete-wait]: ${TTL_FIX}`,
        `  mutate hook-output-log-policy: ${LOG_POLICY}`,
        '2 object(s): 2 would be changed, 0 would be denied',
        'Helm version unknown: assumed a Helm that helm-hook-delete-wait affect(s), since any Helm may run the hooks; that changed what hookguard does to 2 object(s). Pass --helm-version V (or HOOKGUARD_HELM_VERSION) with the Helm that will run them',
        '',
      ].join('\n'),
    );
    const json = await runCommand(['check', '-', '-o', 'json', '--helm-version', '4.2.4'], NEWCOMER);
    expect(JSON.parse(json.stdout).results.map((result: { findings: unknown[] }) => result.findings)).toEqual([
      [
        {
          rule: 'delete-policy',
          action: 'mutate',
          message:
            'set helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded: a succeeded hook is deleted at once instead of staying until its next run',
        },
        { rule: 'ttl-floor', action: 'mutate', message: TTL_WAIT, advisory: 'helm-hook-ttl-wait' },
        { rule: 'hook-output-log-policy', action: 'mutate', message: LOG_POLICY },
      ],
      [
        {
          rule: 'delete-policy',
          action: 'mutate',
          message:
            'set helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded: a succeeded hook is deleted at once instead of staying until its next run',
        },
        { rule: 'hook-output-log-policy', action: 'mutate', message: LOG_POLICY },
      ],
    ]);
  });

  it.each([
    ['the flag', ['--helm-version', '4.2.2'], {}],
    ['HOOKGUARD_HELM_VERSION', [], { HOOKGUARD_HELM_VERSION: '4.2.2' }],
  ])('with %s, judges for that Helm and says nothing of it', async (_name, flags, env) => {
    const run = await runCommand(['check', '-', ...flags, '-o', 'json'], HELM_POD, env);
    const { results, notes } = JSON.parse(run.stdout);
    expect(notes).toEqual([]);
    expect(results[0].findings[0].message).toBe(
      'set helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded: a succeeded hook is deleted at once instead of staying until its next run',
    );
  });

  it('refuses a version that is none, naming the flag', async () => {
    const run = await runCommand(['check', '-', '--helm-version', 'four'], HELM_POD);
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(/^hookguard check: --helm-version: "four" is not a semantic version like 4\.2\.1\n$/);
  });
});

describe('hookguard check --fix', () => {
  it('names on stderr a document it had to write anew, losing its comments', async () => {
    const anchored = `# kept only in place
apiVersion: batch/v1
kind: Job
metadata:
  name: a
  namespace: demo
  annotations: &shared
    helm.sh/hook: pre-install
  labels: *shared
spec:
  ttlSecondsAfterFinished: 60
  activeDeadlineSeconds: 600
  template:
    spec:
      restartPolicy: Never
      containers: [{name: main, image: alpine:3.20}]
`;
    const run = await runCommand(
      ['check', '-', '--fix', '--helm-version', '4.2.2'],
      `---\n${anchored}---\n${HELM_POD}`,
    );
    expect(run.status).toBe(0);
    expect(run.stderr).toBe(
      'hookguard check: stdin document 1 written anew from the patched object, its comments and layout lost: the text edited in place would not read back as the patched object\n',
    );
    // The comments before the document stay; its layout (the flow sequence) goes.
    expect(run.stdout.slice(0, run.stdout.indexOf('---\n', 4))).toBe(
      [
        '---',
        '# kept only in place',
        'apiVersion: batch/v1',
        'kind: Job',
        'metadata:',
        '  name: a',
        '  namespace: demo',
        '  annotations:',
        '    helm.sh/hook: pre-install',
        '    helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded',
        '    helm.sh/hook-output-log-policy: hook-failed',
        '  labels:',
        '    helm.sh/hook: pre-install',
        'spec:',
        '  ttlSecondsAfterFinished: 60',
        '  activeDeadlineSeconds: 600',
        '  template:',
        '    spec:',
        '      restartPolicy: Never',
        '      containers:',
        '        - name: main',
        '          image: alpine:3.20',
        '',
      ].join('\n'),
    );
  });
});

describe("README's flag table", () => {
  it('lists exactly the flags check takes', () => {
    const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
    const table = readme.slice(readme.indexOf('| flag | meaning |'));
    const rows = table.slice(0, table.indexOf('\n\n')).split('\n').slice(2);
    const listed = rows.flatMap((row) => [...(row.split(' | ')[0] ?? '').matchAll(/`(--[a-z-]+)/g)].map((m) => m[1]));
    const taken = Object.keys(CHECK_OPTIONS)
      .filter((flag) => flag !== 'help')
      .map((flag) => `--${flag}`);
    expect(listed.sort()).toEqual(taken.sort());
  });
});

describe('hookguard check DIR', () => {
  it('reads a symbolic link to a file inside the directory, and leaves out one that leaves it, saying so', async () => {
    const root = join(dir, 'links');
    const outside = join(dir, 'outside');
    mkdirSync(join(root, 'sub'), { recursive: true });
    mkdirSync(outside);
    writeFileSync(
      join(outside, 'config.yaml'),
      'apiVersion: v1\nkind: Config\nusers: [{name: admin, user: {token: s3cret}}]\n',
    );
    writeFileSync(join(root, 'sub', 'cm.yaml'), 'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: inside\n');
    symlinkSync(join(outside, 'config.yaml'), join(root, 'kubeconfig.yaml'));
    symlinkSync(join('sub', 'cm.yaml'), join(root, 'same.yaml'));
    const run = await runCommand(['check', root, '--fix']);
    expect(run.status).toBe(0);
    expect(run.stderr).toBe(
      `hookguard check: skipped ${join(root, 'kubeconfig.yaml')}: a symbolic link to a file outside the directory given\n`,
    );
    expect(run.stdout).not.toContain('s3cret');
    expect(run.stdout).toBe(
      'apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: inside\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: inside\n',
    );
  });

  function writeChart(chart: string): void {
    mkdirSync(join(chart, 'templates'), { recursive: true });
    writeFileSync(join(chart, 'Chart.yaml'), 'apiVersion: v2\nname: app\nversion: 0.1.0\n');
    writeFileSync(join(chart, 'values.yaml'), 'skip: min-runtime\n');
    writeFileSync(
      join(chart, 'templates', 'job.yaml'),
      OPTED_OUT_JOB.replace('name: fast', 'name: {{ .Release.Name }}-fast').replace(
        'hookguard.io/skip: min-runtime',
        'hookguard.io/skip: {{ .Values.skip }}',
      ),
    );
  }

  it('renders a chart with the helm on PATH, and points reports at its templates', async () => {
    const { helm } = await helmAndKubectl();
    const chart = join(dir, 'charts', 'app');
    writeChart(chart);
    const env = { PATH: dirname(helm), HOME: dir };
    const text = await runCommand(['check', chart, '--argocd-version', '3.1.0'], undefined, env);
    expect(text.stderr).toBe('');
    expect(text.status).toBe(1);
    expect(text.stdout.split('\n').slice(0, 2)).toEqual([
      'Job apps/release-name-fast: DENIED, 1 patch op(s)',
      `  at ${chart}:2 (document 1): # Source: app/templates/job.yaml`,
    ]);
    const github = await runCommand(['check', chart, '--argocd-version', '3.1.0', '-o', 'github'], undefined, env);
    expect(github.stdout.split('\n')[2]).toBe(
      `::error file=${join(chart, 'templates', 'job.yaml').replaceAll(':', '%3A').replaceAll(',', '%2C')},line=1,title=hookguard version-race (argocd-fast-hook-finalizer-race)::Job apps/release-name-fast ${RACE}%0Arendered at ${chart}:2`,
    );
  });

  it('says what to do where no helm is on PATH', async () => {
    const chart = join(dir, 'charts', 'other');
    writeChart(chart);
    const run = await runCommand(['check', chart], undefined, { PATH: join(dir, 'no-bin') });
    expect(run.status).toBe(2);
    expect(run.stderr).toBe(
      `hookguard check: ${chart} is a Helm chart (it holds Chart.yaml): check renders it with the helm on PATH, and there is none; install helm, or render it yourself: helm template ${chart} | hookguard check -\n`,
    );
  });
});
