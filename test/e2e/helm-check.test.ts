/**
 * End to end: a real `helm template` of our own chart (test/e2e/chart) piped
 * into `hookguard check -`: the built CLI (`node dist/cli/main.js check -`) in
 * a real process for plain Helm, the command in process for the rest.
 *
 * Expected values are computed from the rendered manifests. The exact JSON
 * Patch expectations live in one place, `expectedPlainHelmPatches` below.
 */
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { applyPatch as applyJsonPatch, type Operation } from '../../src/core/json-patch.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { assertValidKubeObject } from '../support/k8s-schema.js';
import { runCli, type CliRun } from '../support/cli.js';
import { runCommand } from '../support/command.js';
import { helmAndKubectl, repoRoot, toolsOrSkip, type K8sTools } from '../support/k8s-tools.js';

const CHART = join('test', 'e2e', 'chart');
const RELEASE = 'rel';
const NAMESPACE = 'demo';

// ---------------------------------------------------------------------------
// Types for what we read (loose on purpose: this is test-side parsing)

interface PatchOp {
  op: string;
  path: string;
  value?: unknown;
  from?: string;
}

interface CheckFinding {
  rule: string;
  action: 'mutate' | 'deny' | 'warn';
  message: string;
  advisory?: unknown;
}

interface CheckResult {
  apiVersion: string;
  kind: string;
  namespace?: string;
  name: string;
  allowed: boolean;
  patch: PatchOp[];
  findings: CheckFinding[];
}

interface KubeDoc {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; annotations?: Record<string, string> };
  spec?: any; // loose on purpose: test-side navigation of rendered objects
  [key: string]: unknown;
}

// ---------------------------------------------------------------------------
// The exact expectations, in one place.

const DELETE_POLICY_PATH = '/metadata/annotations/helm.sh~1hook-delete-policy';
const CLEANUP_SCRIPT_PATH = '/spec/template/spec/containers/0/args/0';
const MIN_RUNTIME_CONTAINER = 'hookguard-min-runtime';
/** hook-deadline sets no deadline by default: it names the missing one. */
const DEADLINE_FINDING = {
  rule: 'hook-deadline',
  action: 'warn',
  message: 'no spec.activeDeadlineSeconds: if its Pod never starts, this hook waits forever',
};

/** ` --ignore-not-found` inserted right after the word `delete`; everything else byte for byte. */
function withIgnoreNotFound(script: string): string {
  const match = /\bdelete\b/.exec(script);
  if (!match) throw new Error(`test chart broken: no "delete" in ${JSON.stringify(script)}`);
  const at = match.index + 'delete'.length;
  return `${script.slice(0, at)} --ignore-not-found${script.slice(at)}`;
}

/**
 * Patches expected for each rendered document when no --argocd-version is
 * given (objects applied by plain Helm: delete-policy, hook-ttl,
 * idempotent-cleanup and ttl-floor apply, hook-deadline warns; check decides at render
 * time, where the delete policy takes effect). Keyed by metadata.name.
 */
/** hook-output-log-policy, at render time on every Helm hook without one: Helm prints a failed hook's logs. */
const OUTPUT_LOG_POLICY_OP: PatchOp = {
  op: 'add',
  path: '/metadata/annotations/helm.sh~1hook-output-log-policy',
  value: 'hook-failed',
};

function expectedPlainHelmPatches(r: Rendered): Record<string, PatchOp[]> {
  const script = cleanupScript(r.cleanupJob);
  return {
    [r.configMap.metadata.name]: [],
    [r.cleanupJob.metadata.name]: [
      // No Helm version given: it may be 4.2.1, which waits out --timeout after a hook-succeeded deletion
      // (helm-hook-delete-wait), so no hook-succeeded, and hook-ttl removes the finished Job instead.
      { op: 'add', path: DELETE_POLICY_PATH, value: 'before-hook-creation' },
      { op: 'replace', path: CLEANUP_SCRIPT_PATH, value: withIgnoreNotFound(script) },
      { op: 'replace', path: '/spec/backoffLimit', value: 3 },
      { op: 'add', path: '/spec/ttlSecondsAfterFinished', value: 86400 },
      OUTPUT_LOG_POLICY_OP,
    ],
    // Has its own delete policy, no `delete`, not a cleanup hook; its TTL of 0 is raised to the floor, as Helm 4
    // would otherwise wait until --timeout for a Job its TTL deleted (helm#31786).
    [r.preUpgradeJob.metadata.name]: [
      { op: 'replace', path: '/spec/ttlSecondsAfterFinished', value: 60 },
      OUTPUT_LOG_POLICY_OP,
    ],
  };
}

/** Op order within one patch is not part of the contract: compare sorted by path, then op. */
function sortOps(ops: readonly PatchOp[]): PatchOp[] {
  return [...ops].sort((a, b) => (a.path === b.path ? a.op.localeCompare(b.op) : a.path < b.path ? -1 : 1));
}

// ---------------------------------------------------------------------------
// Helpers

interface Rendered {
  text: string;
  docs: KubeDoc[];
  configMap: KubeDoc;
  cleanupJob: KubeDoc;
  preUpgradeJob: KubeDoc;
}

function cleanupScript(job: KubeDoc): string {
  const script: unknown = job.spec?.template?.spec?.containers?.[0]?.args?.[0];
  if (typeof script !== 'string') throw new Error('test chart broken: cleanup Job has no args[0] script');
  return script;
}

function parseYamlStream(text: string): KubeDoc[] {
  return parseAllDocuments(text).map((doc, i) => {
    if (doc.errors.length > 0) throw new Error(`document ${i + 1}: ${doc.errors[0]?.message ?? 'YAML error'}`);
    return doc.toJS() as KubeDoc;
  });
}

function byName(docs: readonly KubeDoc[], kind: string, name: string): KubeDoc {
  const found = docs.find((d) => d.kind === kind && d.metadata?.name === name);
  if (!found) throw new Error(`no ${kind} ${name} in ${docs.map((d) => `${d.kind}/${d.metadata?.name}`).join(', ')}`);
  return found;
}

function patchedDoc(doc: KubeDoc, ops: readonly PatchOp[]): KubeDoc {
  // validateOperation=true: an op that does not apply cleanly (bad path, `replace` of a missing member) throws.
  return applyJsonPatch(structuredClone(doc), ops as Operation[], true, false).newDocument;
}

function describeRun(r: CliRun & { signal?: NodeJS.Signals | null }): string {
  return `exit ${String(r.status)}${r.signal ? ` (signal ${r.signal})` : ''}\n--- stderr ---\n${r.stderr}\n--- stdout ---\n${r.stdout.slice(0, 4000)}`;
}

function hookguardCheck(input: string, ...args: string[]): Promise<CliRun> {
  return runCommand(['check', '-', ...args], input);
}

async function checkJson(input: string, ...args: string[]): Promise<{ run: CliRun; results: CheckResult[] }> {
  const run = await hookguardCheck(input, '--output', 'json', ...args);
  return { run, results: resultsOf(run) };
}

function resultsOf(run: CliRun): CheckResult[] {
  let parsed: { results?: unknown };
  try {
    parsed = JSON.parse(run.stdout) as { results?: unknown };
  } catch (err) {
    throw new Error(`stdout is not JSON (${(err as Error).message}); ${describeRun(run)}`, { cause: err });
  }
  if (!Array.isArray(parsed.results)) throw new Error(`no "results" array in JSON output; ${describeRun(run)}`);
  return parsed.results as CheckResult[];
}

function resultFor(results: readonly CheckResult[], name: string): CheckResult {
  const found = results.find((x) => x.name === name);
  if (!found) throw new Error(`no result for ${name}: ${JSON.stringify(results.map((x) => x.name))}`);
  return found;
}

// ---------------------------------------------------------------------------

const tools: K8sTools | undefined = await toolsOrSkip('helm-check e2e', helmAndKubectl);

describe.skipIf(!tools)('helm template | hookguard check (real helm)', () => {
  let rendered: Rendered;
  let helmHome: string;

  beforeAll(() => {
    // Keep helm away from the user's ~/.config/helm, ~/.cache/helm.
    helmHome = mkdtempSync(join(tmpdir(), 'hookguard-e2e-helm-'));
    const helm = spawnSync(tools!.helm, ['template', RELEASE, CHART, '-n', NAMESPACE], {
      cwd: repoRoot,
      encoding: 'utf8',
      env: {
        ...process.env,
        HELM_CACHE_HOME: join(helmHome, 'cache'),
        HELM_CONFIG_HOME: join(helmHome, 'config'),
        HELM_DATA_HOME: join(helmHome, 'data'),
      },
    });
    if (helm.error) throw helm.error;
    if (helm.status !== 0) throw new Error(`helm template failed: ${describeRun(helm)}`);
    const docs = parseYamlStream(helm.stdout);
    rendered = {
      text: helm.stdout,
      docs,
      configMap: byName(docs, 'ConfigMap', `${RELEASE}-state`),
      cleanupJob: byName(docs, 'Job', `${RELEASE}-cleanup`),
      preUpgradeJob: byName(docs, 'Job', `${RELEASE}-pre-upgrade`),
    };
  });

  afterAll(() => {
    if (helmHome) rmSync(helmHome, { recursive: true, force: true });
  });

  it('helm rendered what the chart says (guards the expectations below)', () => {
    expect(rendered.docs).toHaveLength(3);
    expect(rendered.cleanupJob.metadata.annotations).toEqual({ 'helm.sh/hook': 'post-delete' });
    expect(rendered.cleanupJob.spec.backoffLimit).toBe(1);
    expect(rendered.cleanupJob.spec.template.spec.containers[0].command).toEqual(['/bin/sh', '-c']);
    expect(cleanupScript(rendered.cleanupJob)).toBe(
      `kubectl delete configmap ${RELEASE}-state -n ${NAMESPACE}\necho done\n`,
    );
    expect(rendered.preUpgradeJob.spec.ttlSecondsAfterFinished).toBe(0);
    for (const doc of rendered.docs) {
      if (doc.kind === 'Job') assertValidKubeObject(doc);
    }
  });

  describe('--output json (plain Helm), the built CLI in a real process', () => {
    let run: CliRun;
    let results: CheckResult[];
    beforeAll(() => {
      run = runCli(['check', '-', '--output', 'json'], rendered.text);
      results = resultsOf(run);
    });

    it('exits 0', () => {
      expect(run.status, describeRun(run)).toBe(0);
    });

    it('has one result per document, in input order, with its identity', () => {
      expect(
        results.map((x) => ({ apiVersion: x.apiVersion, kind: x.kind, namespace: x.namespace, name: x.name })),
      ).toEqual(
        rendered.docs.map((d) => ({
          apiVersion: d.apiVersion,
          kind: d.kind,
          namespace: d.metadata.namespace,
          name: d.metadata.name,
        })),
      );
      for (const x of results) expect(x.allowed, x.name).toBe(true);
    });

    it('produces exactly the expected patches', () => {
      const expected = expectedPlainHelmPatches(rendered);
      const got = Object.fromEntries(results.map((x) => [x.name, sortOps(x.patch)]));
      const want = Object.fromEntries(Object.entries(expected).map(([name, ops]) => [name, sortOps(ops)]));
      expect(got).toEqual(want);
    });

    it('reports the rules that mutated, and nothing for the ConfigMap', () => {
      const cm = resultFor(results, rendered.configMap.metadata.name);
      expect(cm.patch).toEqual([]);
      expect(cm.findings).toEqual([]);

      const cleanup = resultFor(results, rendered.cleanupJob.metadata.name);
      const mutatingRules = new Set(cleanup.findings.filter((f) => f.action === 'mutate').map((f) => f.rule));
      expect(mutatingRules).toEqual(
        new Set(['delete-policy', 'hook-ttl', 'idempotent-cleanup', 'hook-output-log-policy']),
      );
      expect(cleanup.findings).toContainEqual(DEADLINE_FINDING);
      for (const f of cleanup.findings) expect(typeof f.message, JSON.stringify(f)).toBe('string');

      const pre = resultFor(results, rendered.preUpgradeJob.metadata.name);
      expect(pre.findings).toEqual([
        {
          rule: 'ttl-floor',
          action: 'mutate',
          message:
            'raised spec.ttlSecondsAfterFinished from 0 to 60: Helm 4 waits until --timeout for a hook Job deleted before it saw the Job finish',
          advisory: 'helm-hook-ttl-wait',
        },
        DEADLINE_FINDING,
        {
          rule: 'hook-output-log-policy',
          action: 'mutate',
          message: "set helm.sh/hook-output-log-policy: hook-failed: Helm prints the hook's logs if it fails",
        },
      ]);
    });

    it('patches apply cleanly to the rendered objects and give schema-valid Jobs', () => {
      for (const doc of rendered.docs) {
        const result = resultFor(results, doc.metadata.name);
        const patched = patchedDoc(doc, result.patch);
        if (doc.kind === 'Job') assertValidKubeObject(patched);
      }
    });
  });

  describe('--output json --argocd-version 3.1.0 (affected Argo CD)', () => {
    let run: CliRun;
    let results: CheckResult[];
    beforeAll(async () => {
      ({ run, results } = await checkJson(rendered.text, '--argocd-version', '3.1.0'));
    });

    it('exits 0 and still has one result per document in order', () => {
      expect(run.status, describeRun(run)).toBe(0);
      expect(results.map((x) => `${x.kind}/${x.name}`)).toEqual(
        rendered.docs.map((d) => `${d.kind}/${d.metadata.name}`),
      );
    });

    it('raises the pre-upgrade Job ttlSecondsAfterFinished 0 -> 60 and adds the min-runtime init container', () => {
      const pre = resultFor(results, rendered.preUpgradeJob.metadata.name);
      expect(pre.allowed).toBe(true);
      expect(pre.patch).toContainEqual({ op: 'replace', path: '/spec/ttlSecondsAfterFinished', value: 60 });

      const patched = patchedDoc(rendered.preUpgradeJob, pre.patch);
      expect(patched.spec.ttlSecondsAfterFinished).toBe(60);
      const initNames = (patched.spec.template.spec.initContainers ?? []).map((c: { name?: string }) => c.name);
      expect(initNames).toContain(MIN_RUNTIME_CONTAINER);
      // The user's own container is untouched.
      expect(patched.spec.template.spec.containers).toEqual(rendered.preUpgradeJob.spec.template.spec.containers);
      assertValidKubeObject(patched);

      const rules = new Set(pre.findings.filter((f) => f.action === 'mutate').map((f) => f.rule));
      expect(rules.has('ttl-floor'), JSON.stringify(pre.findings)).toBe(true);
      expect(rules.has('min-runtime'), JSON.stringify(pre.findings)).toBe(true);
    });

    it('leaves the ConfigMap alone', () => {
      const cm = resultFor(results, rendered.configMap.metadata.name);
      expect(cm.patch).toEqual([]);
      expect(cm.findings).toEqual([]);
    });

    it('every patch applies cleanly and yields schema-valid Jobs', () => {
      for (const doc of rendered.docs) {
        const patched = patchedDoc(doc, resultFor(results, doc.metadata.name).patch);
        if (doc.kind === 'Job') assertValidKubeObject(patched);
      }
    });
  });

  it('--argocd-version 3.4.0 (fixed release): no min-runtime init container', async () => {
    const { run, results } = await checkJson(rendered.text, '--argocd-version', '3.4.0');
    expect(run.status, describeRun(run)).toBe(0);
    for (const doc of rendered.docs) {
      const result = resultFor(results, doc.metadata.name);
      expect(
        result.findings.map((f) => f.rule),
        doc.metadata.name,
      ).not.toContain('min-runtime');
      const patched = patchedDoc(doc, result.patch);
      const init = (patched.spec?.template?.spec?.initContainers ?? []) as Array<{ name?: string }>;
      expect(
        init.map((c) => c.name),
        doc.metadata.name,
      ).not.toContain(MIN_RUNTIME_CONTAINER);
    }
  });

  describe('--fix', () => {
    let run: CliRun;
    let fixed: KubeDoc[];
    beforeAll(async () => {
      run = await hookguardCheck(rendered.text, '--fix');
      fixed = run.status === 0 ? parseYamlStream(run.stdout) : [];
    });

    it('exits 0', () => {
      expect(run.status, describeRun(run)).toBe(0);
    });

    it('prints the same documents in the same order', () => {
      expect(fixed.map((d) => `${d.apiVersion}/${d.kind}/${d.metadata?.name}`)).toEqual(
        rendered.docs.map((d) => `${d.apiVersion}/${d.kind}/${d.metadata.name}`),
      );
    });

    it('leaves the non-hook ConfigMap unchanged', () => {
      expect(byName(fixed, 'ConfigMap', rendered.configMap.metadata.name)).toEqual(rendered.configMap);
    });

    it('makes the cleanup script idempotent, byte for byte otherwise', () => {
      const job = byName(fixed, 'Job', rendered.cleanupJob.metadata.name);
      const script = cleanupScript(job);
      expect(script).toContain('--ignore-not-found');
      expect(script).toBe(withIgnoreNotFound(cleanupScript(rendered.cleanupJob)));
      expect(job.spec.backoffLimit).toBe(3);
      expect(job.metadata.annotations?.['helm.sh/hook-delete-policy']).toBe('before-hook-creation');
    });

    it('every Job in the output is schema-valid', () => {
      const jobs = fixed.filter((d) => d.kind === 'Job');
      expect(jobs).toHaveLength(rendered.docs.filter((d) => d.kind === 'Job').length);
      for (const job of jobs) assertValidKubeObject(job);
    });

    it('agrees with --output json: output == rendered documents with their patches applied', async () => {
      const { results } = await checkJson(rendered.text);
      const expected = rendered.docs.map((doc) => patchedDoc(doc, resultFor(results, doc.metadata.name).patch));
      expect(fixed).toEqual(expected);
    });
  });

  it('bad input: exit 2 and stderr names the broken document (4th)', async () => {
    const input = `${rendered.text.endsWith('\n') ? rendered.text : `${rendered.text}\n`}--- \n: : not yaml [\n`;
    // Guard: the appended document really is the 4th and really is invalid YAML.
    const parsed = parseAllDocuments(input);
    expect(parsed).toHaveLength(rendered.docs.length + 1);
    expect(parsed[3]?.errors.length).toBeGreaterThan(0);

    for (const output of ['json', 'text']) {
      const run = await hookguardCheck(input, '--output', output);
      expect(run.status, describeRun(run)).toBe(2);
      expect(run.stderr, describeRun(run)).toMatch(/document\D{0,3}4\b/i);
    }
  });
});
