// `hookguard check` as a user runs it, over the real chart fixtures: in process, through the CommandIO the commands
// take (test/support/command.ts); and the built CLI in a real process, which must exit and print exactly the same.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { applyPatch } from '../../src/core/json-patch.js';
import { parseAllDocuments, parse, type Document } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { fixturePath, fixtureText, loadFixtures } from '../support/fixtures.js';
import { runCli } from '../support/cli.js';
import { runCommand } from '../support/command.js';
import { runHookguard } from '../../src/cli/hookguard.js';
import { OPTED_OUT_JOB } from '../support/manifests-text.js';
import { repoRoot } from '../support/k8s-tools.js';

const CONFIGMAP = `# a plain object between the hooks
apiVersion: v1
kind: ConfigMap
metadata:
  name: settings   # trailing comment kept
  namespace: ns
data:
  key: "value"
`;

function goldenPatch(file: string, scenario: string): unknown {
  const golden = JSON.parse(
    readFileSync(join(repoRoot, 'test', 'golden', 'expected', file.replace(/\.yaml$/, '.json')), 'utf8'),
  );
  return golden[scenario].patch;
}

describe('hookguard check over the real chart fixtures', () => {
  const fixtures = loadFixtures();

  // check decides at render time: the golden scenario `helm-render` is the core's decision there, for plain Helm.
  it.each(fixtures.map(({ file }) => file))(
    '%s: the CLI computes the same patch as the core at render time',
    async (file) => {
      const run = await runCommand(['check', fixturePath(file), '--output', 'json']);
      expect(run.stderr).toBe('');
      expect(run.status).toBe(0);
      const { results } = JSON.parse(run.stdout);
      expect(results).toHaveLength(1);
      expect(Object.keys(results[0]).sort()).toEqual(
        [
          'allowed',
          'apiVersion',
          'findings',
          'kind',
          'label',
          'mode',
          'name',
          'patch',
          'source',
          ...(results[0].namespace ? ['namespace'] : []),
        ].sort(),
      );
      expect(results[0].source).toEqual({
        file: fixturePath(file),
        document: 1,
        line: 1,
        firstLine: fixtureText(file).split('\n')[0],
      });
      expect(results[0].patch).toEqual(goldenPatch(file, 'helm-render'));
    },
  );

  it('reads a multi-document stream from stdin, keeps document order, and --fix prints what would be stored', async () => {
    const stream = [...fixtures.map(({ file }) => fixtureText(file)), CONFIGMAP].join('\n---\n');
    const json = await runCommand(['check', '-', '--output', 'json'], stream);
    expect(json.status).toBe(0);
    const { results } = JSON.parse(json.stdout);
    expect(results.map((result: { name: string }) => result.name)).toEqual([
      ...fixtures.map(({ object }) => object.metadata?.name ?? object.metadata?.generateName),
      'settings',
    ]);
    expect(results.at(-1)).toEqual({
      apiVersion: 'v1',
      kind: 'ConfigMap',
      namespace: 'ns',
      name: 'settings',
      label: 'ConfigMap ns/settings',
      allowed: true,
      mode: 'enforce',
      patch: [],
      findings: [],
      source: {
        file: '-',
        document: fixtures.length + 1,
        // CONFIGMAP's leading comment: a document's first line is its first line with more than a separator.
        line: stream.slice(0, stream.lastIndexOf(CONFIGMAP)).split('\n').length,
        firstLine: '# a plain object between the hooks',
      },
    });

    const fixed = await runCommand(['check', '-', '--fix'], stream);
    expect(fixed.status).toBe(0);
    const stored = parseAllDocuments(fixed.stdout, {}) as Document[];
    const originals = [...fixtures.map(({ object }) => object), parse(CONFIGMAP)];
    expect(stored.map((document) => document.toJS())).toEqual(
      originals.map(
        (original, index) => applyPatch(structuredClone(original), results[index].patch, true, false).newDocument,
      ),
    );
    // A document hookguard leaves alone comes out byte for byte.
    expect(fixed.stdout.endsWith(`---\n${CONFIGMAP}`)).toBe(true);
    // Scripts keep their block style when only a flag is inserted.
    expect(fixed.stdout).toContain('            - |-\n              set -euo pipefail\n');
  });
});

describe('hookguard check exit status', () => {
  it('exits 1 when something would be denied, naming the advisory', async () => {
    const run = await runCommand(['check', '-', '--argocd-version', '3.1.0', '--output', 'json'], OPTED_OUT_JOB);
    expect(run.status).toBe(1);
    const [result] = JSON.parse(run.stdout).results;
    expect(result.allowed).toBe(false);
    // The whole message, never cut as an admission warning is (at 120 characters).
    expect(result.findings).toContainEqual({
      rule: 'version-race',
      action: 'deny',
      advisory: 'argocd-fast-hook-finalizer-race',
      message:
        'Job apps/fast races with Argo CD 3.1.0 (argocd-fast-hook-finalizer-race: a hook Job that finishes before Argo CD observes it keeps the hook finalizer and the sync never ends): min-runtime opted out with hookguard.io/skip. Fix: remove min-runtime from hookguard.io/skip, or upgrade to Argo CD 3.4.0, which fixed the race.',
    });
  });

  // How the Helm post-renderer and the Argo CD plugin tell it the version (plugins/, manifests/argocd-cmp/).
  it('takes the Argo CD version from HOOKGUARD_ARGOCD_VERSION as from --argocd-version; the flag wins', async () => {
    const flagged = await runCommand(['check', '-', '--argocd-version', '3.1.0', '--output', 'json'], OPTED_OUT_JOB);
    const fromEnv = await runCommand(['check', '-', '--output', 'json'], OPTED_OUT_JOB, {
      HOOKGUARD_ARGOCD_VERSION: '3.1.0',
    });
    expect(fromEnv).toEqual(flagged);
    expect(fromEnv.status).toBe(1);
    const overridden = await runCommand(['check', '-', '--argocd-version', '3.4.0'], OPTED_OUT_JOB, {
      HOOKGUARD_ARGOCD_VERSION: '3.1.0',
    });
    expect(overridden.status).toBe(0);
  });

  it('exits 0 for the same input in audit mode, and on an unknown Argo CD version', async () => {
    expect(
      (await runCommand(['check', '-', '--argocd-version', '3.1.0', '--mode', 'audit'], OPTED_OUT_JOB)).status,
    ).toBe(0);
    expect((await runCommand(['check', '-'], OPTED_OUT_JOB)).status).toBe(0);
  });

  it('--fix with a denial prints nothing on stdout and, on stderr, each denial: the object, the rule, why, and where (exit 1)', async () => {
    // A denied manifest never reaches `check --fix > fixed.yaml`, with or without pipefail.
    const run = await runCommand(['check', '-', '--fix', '--argocd-version', '3.1.0'], OPTED_OUT_JOB);
    expect(run.status).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe(
      'hookguard check: Job apps/fast denied by version-race: Job apps/fast races with Argo CD 3.1.0 (argocd-fast-hook-finalizer-race: a hook Job that finishes before Argo CD observes it keeps the hook finalizer and the sync never ends): min-runtime opted out with hookguard.io/skip. Fix: remove min-runtime from hookguard.io/skip, or upgrade to Argo CD 3.4.0, which fixed the race.\n' +
        '  at stdin:1 (document 1): apiVersion: batch/v1\n',
    );
  });

  it('--fix on a PreSync Job with activeDeadlineSeconds 60 adds the guard and its 10 s wait: 70 (issue 27, item 12)', async () => {
    const job = OPTED_OUT_JOB.replace('    hookguard.io/skip: min-runtime\n', '').replace(
      'spec:\n  template:',
      'spec:\n  activeDeadlineSeconds: 60\n  template:',
    );
    expect(job).toContain('activeDeadlineSeconds: 60');
    const run = await runCommand(['check', '-', '--fix', '--argocd-version', '3.1.0'], job);
    expect(run.status).toBe(0);
    const fixed = parse(run.stdout);
    expect(fixed.spec.activeDeadlineSeconds).toBe(70);
    expect(fixed.spec.template.spec.initContainers.map((c: { command: string[] }) => c.command)).toEqual([
      ['/busybox/sleep', '10'],
    ]);
  });

  it('--openshift: the guard sets no user or group, which restricted-v2 assigns from the namespace range', async () => {
    const job = OPTED_OUT_JOB.replace('    hookguard.io/skip: min-runtime\n', '');
    const guardOf = async (flags: string[]) => {
      const run = await runCommand(['check', '-', '--argocd-version', '3.1.0', '--output', 'json', ...flags], job);
      const [result] = JSON.parse(run.stdout).results;
      const added = result.patch.find((op: { path: string }) => op.path === '/spec/template/spec/initContainers');
      return added.value[0].securityContext;
    };
    // The default image runs as its own 65532 (distroless debug-nonroot): no user of hookguard's anywhere.
    for (const flags of [[], ['--openshift']]) {
      const guard = await guardOf(flags);
      expect(guard, flags.join(' ')).not.toHaveProperty('runAsUser');
      expect(guard, flags.join(' ')).not.toHaveProperty('runAsGroup');
      expect(guard, flags.join(' ')).toMatchObject({ runAsNonRoot: true });
    }
  });

  it('prints a readable text report by default, each object with where it was read', async () => {
    const run = await runCommand(
      ['check', '-', '--argocd-version', '3.1.0'],
      `---\n# Source: x/job.yaml\n${OPTED_OUT_JOB}`,
    );
    expect(run.stdout).toBe(
      [
        'Job apps/fast: DENIED, 1 patch op(s)',
        '  at stdin:2 (document 1): # Source: x/job.yaml',
        '  mutate delete-policy: set argocd.argoproj.io/hook-delete-policy: BeforeHookCreation,HookSucceeded: a succeeded hook is deleted at once instead of staying until its next run',
        '  warn   hook-deadline: no spec.activeDeadlineSeconds: if its Pod never starts, this hook waits forever',
        '  deny   version-race [argocd-fast-hook-finalizer-race]: Job apps/fast races with Argo CD 3.1.0 (argocd-fast-hook-finalizer-race: a hook Job that finishes before Argo CD observes it keeps the hook finalizer and the sync never ends): min-runtime opted out with hookguard.io/skip. Fix: remove min-runtime from hookguard.io/skip, or upgrade to Argo CD 3.4.0, which fixed the race.',
        '1 object(s): 1 would be changed, 1 would be denied',
        '',
      ].join('\n'),
    );
  });

  it.each([
    [
      'invalid YAML',
      ['check', '-'],
      `${CONFIGMAP}---\n: : not yaml [\n`,
      // The whole message: file, document, line, and the parser's excerpt with its caret.
      /^hookguard check: stdin document 2, line 10: invalid YAML: .* at line 10, column 3:\n\n: : not yaml \[\n {2}\^\n$/,
    ],
    [
      'a document that is not an object',
      ['check', '-'],
      '--- just a string\n',
      /stdin document 1: expected a Kubernetes object \(a mapping\), got string/,
    ],
    [
      'an object without kind',
      ['check', '-'],
      'apiVersion: v1\nmetadata: {}\n',
      /stdin document 1: not a Kubernetes object: apiVersion and kind must be strings/,
    ],
    ['a missing file', ['check', '/nonexistent/manifest.yaml'], undefined, /cannot read \/nonexistent\/manifest\.yaml/],
    ['no input named', ['check'], undefined, /name the manifests to check/],
    [
      'a bad --output',
      ['check', '-', '--output', 'xml'],
      CONFIGMAP,
      /^hookguard check: --output: must be one of text, json, sarif, junit, github, got "xml"\n$/,
    ],
    [
      'an unknown flag, in balanced quotes',
      ['check', '-', '--frobnicate'],
      CONFIGMAP,
      /^hookguard check: unknown option --frobnicate \(--help lists the options\); to name a file that starts with -, put it after --: -- --frobnicate\n$/,
    ],
    [
      'a bad --argocd-version, named as typed',
      ['check', '-', '--argocd-version', 'v3.x'],
      CONFIGMAP,
      /^hookguard check: --argocd-version: "v3\.x" is not a semantic version like 2\.14\.3\n$/,
    ],
    [
      'a bad --mode',
      ['check', '-', '--mode', 'block'],
      CONFIGMAP,
      /^hookguard check: --mode: must be one of enforce, audit, got "block"\n$/,
    ],
    [
      '--fix with --output json, which would print YAML',
      ['check', '-', '--fix', '-o', 'json'],
      CONFIGMAP,
      /^hookguard check: --fix prints the manifests \(YAML\) and --output json a report: run check once for each, or leave one out\n$/,
    ],
  ])('exits 2 on %s, saying what is wrong', async (_name, args, input, message) => {
    const run = await runCommand(args, input);
    expect(run.status).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toMatch(message);
  });

  it('takes -o for --output', async () => {
    expect(await runCommand(['check', '-', '-o', 'json'], OPTED_OUT_JOB)).toEqual(
      await runCommand(['check', '-', '--output', 'json'], OPTED_OUT_JOB),
    );
  });

  it('reads JSON documents too', async () => {
    const run = await runCommand(['check', '-', '--output', 'json'], JSON.stringify(parse(OPTED_OUT_JOB)));
    expect(run.status).toBe(0);
    expect(JSON.parse(run.stdout).results[0].name).toBe('fast');
  });
});

describe('hookguard advisories and rules', () => {
  it('lists the built-in advisories, and those a config adds or disables', async () => {
    const builtIn = JSON.parse((await runCommand(['advisories', '--output', 'json'])).stdout).advisories.map(
      (advisory: { id: string }) => advisory.id,
    );
    expect(builtIn).toEqual([
      'argocd-hook-finalizer-partial',
      'argocd-fast-hook-finalizer-race',
      'argocd-hook-ttl-race',
      'argocd-hook-finalizer-cache-leak',
      'argocd-native-sidecar-finalizer-update',
      'argocd-foreign-finalizer',
      'argocd-autosync-skips-hooks',
      'argocd-delete-hook-lost',
      'argocd-failed-delete-hook-loop',
      'helm-hook-delete-wait',
      'helm-hook-ttl-wait',
      'flux-helm-controller-hook-output-crash',
    ]);

    const dir = mkdtempSync(join(tmpdir(), 'hookguard-config-'));
    const file = join(dir, 'config.yaml');
    writeFileSync(
      file,
      'advisories:\n  - id: argocd-hook-ttl-race\n    disabled: true\n  - id: my-race\n    summary: ours\n    affected: ">=3.0.0 <3.0.5"\n    mitigatedBy: [min-runtime]\n',
    );
    const configured = JSON.parse(
      (await runCommand(['advisories', '--output', 'json', '--config', file])).stdout,
    ).advisories;
    expect(configured.map((advisory: { id: string }) => advisory.id)).toEqual([
      'argocd-hook-finalizer-partial',
      'argocd-fast-hook-finalizer-race',
      'argocd-hook-finalizer-cache-leak',
      'argocd-native-sidecar-finalizer-update',
      'argocd-foreign-finalizer',
      'argocd-autosync-skips-hooks',
      'argocd-delete-hook-lost',
      'argocd-failed-delete-hook-loop',
      'helm-hook-delete-wait',
      'helm-hook-ttl-wait',
      'flux-helm-controller-hook-output-crash',
      'my-race',
    ]);
    expect((await runCommand(['advisories'])).stdout).toContain(
      'argocd-fast-hook-finalizer-race\n  a hook Job that finishes before Argo CD observes it',
    );
    expect((await runCommand(['advisories'])).stdout).toContain(
      '\n  affected: Helm 4.2.1   fixed: 4.2.2   checked: 2026-11-25\n  mitigated by: delete-policy\n',
    );
  });

  it('says which advisories only the sweep answers, which rules warn, and when each was checked', async () => {
    const text = (await runCommand(['advisories'])).stdout;
    expect(text).toContain(
      'argocd-hook-finalizer-cache-leak\n' +
        "  a completed hook whose live object is missing from Argo CD's cache keeps the hook finalizer; deleting it then hangs\n" +
        '  affected: Argo CD >=3.4.0-0   fixed: not yet   checked: 2026-11-23\n' +
        '  mitigated by: hookguard sweep --apply (it frees what stays stuck), not by an admission rule\n' +
        '  https://github.com/argoproj/argo-cd/issues/29464\n',
    );
    expect(text).toContain(
      '  mitigated by: hookguard sweep --apply (it frees what stays stuck), not by an admission rule\n' +
        '  warned about by: native-sidecar\n',
    );
    expect(text).toContain('  mitigated by: nothing hookguard can change\n  warned about by: foreign-finalizer\n');
    const { advisories } = JSON.parse((await runCommand(['advisories', '--output', 'json'])).stdout);
    expect(advisories.find((advisory: { id: string }) => advisory.id === 'argocd-hook-finalizer-cache-leak')).toEqual({
      id: 'argocd-hook-finalizer-cache-leak',
      summary:
        "a completed hook whose live object is missing from Argo CD's cache keeps the hook finalizer; deleting it then hangs",
      affected: '>=3.4.0-0',
      checked: '2026-11-23',
      references: [
        'https://github.com/argoproj/argo-cd/issues/29464',
        'https://github.com/argoproj/argo-cd/pull/29469',
        'https://github.com/argoproj/argo-cd/blob/v3.4.0/gitops-engine/pkg/sync/sync_context.go#L834',
      ],
      mitigatedBy: [],
      mitigatedBySweep: true,
      warnedBy: [],
      notes: [],
    });
  });

  it('lists the Argo CD 3.3+/3.4+ advisories with their range, the hooks they concern and their sources (issue 27)', async () => {
    const text = (await runCommand(['advisories'])).stdout;
    const block = (id: string) => text.slice(text.indexOf(`${id}\n`)).split(/\n(?=\S)/)[0];
    expect(block('argocd-delete-hook-lost')).toContain(
      "  affected: Argo CD >=3.4.0-rc5   fixed: not yet   checked: 2026-11-27\n  concerns: Argo CD's PreDelete and PostDelete hooks\n  mitigated by: nothing hookguard can change\n  warned about by: lost-delete-hook\n",
    );
    expect(block('argocd-delete-hook-lost')).toContain('https://github.com/argoproj/argo-cd/issues/29100');
    expect(block('argocd-failed-delete-hook-loop')).toContain(
      '  affected: Argo CD >=3.3.0-0   fixed: not yet   checked: 2026-11-27\n',
    );
    expect(block('argocd-failed-delete-hook-loop')).toContain('https://github.com/argoproj/argo-cd/pull/22288');
    expect(block('argocd-autosync-skips-hooks')).toContain(
      '  affected: Argo CD >=3.4.0-0   fixed: not yet   checked: 2026-11-27\n  mitigated by: nothing hookguard can change\n',
    );
    expect(block('argocd-autosync-skips-hooks')).toContain('https://github.com/argoproj/argo-cd/issues/27792');
  });

  it('lists the rule catalog', async () => {
    const { rules } = JSON.parse((await runCommand(['rules', '--output', 'json'])).stdout);
    expect(rules.map((rule: { id: string }) => rule.id)).toEqual([
      'delete-policy',
      'hook-ttl',
      'idempotent-cleanup',
      'lost-delete-hook',
      'foreign-finalizer',
      'hook-finalizer',
      'native-sidecar',
      'ttl-floor',
      'min-runtime',
      'hook-deadline',
      'hook-pod-restart-policy',
      'mesh-sidecar',
      'hook-sync-options',
      'suspended-hook',
      'hook-managed-by',
      'hook-output-log-policy',
      'flux-hook-output-crash',
      'hook-label',
      'termination-message-policy',
      'immutable-update',
      'version-race',
      'hook-pod-restart-policy',
    ]);
  });

  it('prints the catalog in aligned columns under a header, each side of a rule in its own words', async () => {
    const lines = (await runCommand(['rules'])).stdout.trimEnd().split('\n');
    expect(lines[0]).toBe('RULE                       WEBHOOK    OP     WHAT IT DOES (WHERE IT TAKES EFFECT)');
    const restart = lines.filter((line) => line.startsWith('hook-pod-restart-policy '));
    expect(restart.map((line) => line.slice(0, 48))).toEqual([
      'hook-pod-restart-policy    mutating   CREATE Set',
      'hook-pod-restart-policy    validating CREATE Den',
    ]);
    expect(
      new Set(
        lines
          .slice(1)
          .map((line) => (line.indexOf(' CREATE ') >= 0 ? line.indexOf(' CREATE ') : line.indexOf(' UPDATE '))),
      ),
    ).toEqual(new Set([lines[0]!.indexOf(' OP ')]));
  });

  it('wraps the catalog to the width of the terminal, each continuation under the text', async () => {
    let stdout = '';
    const io = { stdout: (text: string) => (stdout += text), stderr: () => undefined, env: {} };
    await runHookguard(['rules'], { ...io, readStdin: () => Promise.resolve(''), columns: 100 });
    const lines = stdout.trimEnd().split('\n');
    expect(Math.max(...lines.map((line) => line.length))).toBeLessThanOrEqual(100);
    const ttl = lines.indexOf(lines.find((line) => line.startsWith('ttl-floor '))!);
    expect(lines.slice(ttl, ttl + 4).join('\n')).toBe(
      [
        'ttl-floor                  mutating   CREATE Raises ttlSecondsAfterFinished below the floor (default',
        '                                             60) on hook Jobs (Helm and Argo CD delete-phase hooks:',
        '                                             always; Argo CD sync hooks: on an affected or unknown',
        '                                             version), so the Job outlives the tool observing it.',
      ].join('\n'),
    );
  });
});

describe('the built CLI in a real process', () => {
  const dir = mkdtempSync(join(tmpdir(), 'hookguard-check-'));
  const manifest = join(dir, 'manifest.yaml');
  writeFileSync(manifest, `${CONFIGMAP}---\n${OPTED_OUT_JOB}`);
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  // The wiring in src/cli/main.ts and process.ts: arguments, stdin, a file, stdout, stderr and the exit status.
  it.each<[string, string[], string | undefined, number]>([
    [
      'a file named on the command line, something denied',
      ['check', manifest, '--argocd-version', '3.1.0'],
      undefined,
      1,
    ],
    ['stdin, JSON out, all allowed', ['check', '-', '--output', 'json'], OPTED_OUT_JOB, 0],
    ['bad input on stdin', ['check', '-'], 'apiVersion: v1\nmetadata: {}\n', 2],
  ])('%s: exits and prints exactly as the command does in process', async (_name, args, input, status) => {
    const inProcess = await runCommand(args, input);
    expect(inProcess.status).toBe(status);
    expect(runCli(args, input)).toEqual(inProcess);
  });
});
