/**
 * hookguard's CI integrations, each run the way its runner runs it:
 *
 * - action.yml, the composite GitHub Action: its `run` steps in `bash --noprofile --norc -eo pipefail {0}` (the
 *   shell a runner uses for `shell: bash`), with the variables a runner sets (GITHUB_ACTION_PATH, GITHUB_WORKSPACE,
 *   GITHUB_OUTPUT, GITHUB_PATH, GITHUB_ENV, RUNNER_TEMP, CI, GITHUB_ACTIONS), inputs and their defaults put in as the
 *   runner evaluates `${{ inputs.* }}`, in a workspace of its own. Its one `uses` step, actions/setup-node, puts
 *   Node.js on PATH: here the Node.js running the tests is.
 * - .pre-commit-hooks.yaml, with Debian's `pre-commit` (`apt-get install pre-commit`): `pre-commit try-repo` of this
 *   checkout (its committed files and changes to them) in a git repository of manifests, as `pre-commit run` does
 *   with a config naming this repository; hookguard on PATH is this checkout's build.
 */
import { spawnSync } from 'node:child_process';
import { cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import { cliPath } from '../support/cli.js';
import { repoRoot } from '../support/k8s-tools.js';

interface Step {
  id?: string;
  name?: string;
  uses?: string;
  shell?: string;
  run?: string;
  env?: Record<string, string>;
  with?: Record<string, string>;
}
interface Action {
  inputs: Record<string, { default?: string }>;
  outputs: Record<string, { value: string }>;
  runs: { using: string; steps: Step[] };
}

const action = parse(readFileSync(join(repoRoot, 'action.yml'), 'utf8')) as Action;
const DENIAL_AT_3_1_0 =
  'deny   version-race [argocd-fast-hook-finalizer-race]: Job demo/migrate races with Argo CD 3.1.0';

let root: string;
beforeAll(() => {
  root = mkdtempSync(join(tmpdir(), 'hookguard-ci-plugins-'));
});
afterAll(() => {
  if (root) rmSync(root, { recursive: true, force: true });
});

/** `${{ … }}` as a runner evaluates the forms action.yml uses; any other expression fails the test. */
function evaluate(text: string, inputs: Record<string, string>, steps: Record<string, Record<string, string>>): string {
  return text.replace(/\$\{\{\s*([^}]*?)\s*\}\}/g, (_whole, expression: string) => {
    const input = /^inputs\.([\w-]+)$/.exec(expression);
    if (input) return inputs[input[1]!] ?? '';
    const output = /^steps\.([\w-]+)\.outputs\.([\w-]+)$/.exec(expression);
    if (output) return steps[output[1]!]?.[output[2]!] ?? '';
    throw new Error(`action.yml: an expression this runner stand-in does not know: ${expression}`);
  });
}

interface ActionRun {
  failed: boolean;
  log: string;
  outputs: Record<string, string>;
}

/** Runs action.yml's steps in order, as a runner does, in `workspace`; stops at the first failing step. */
function runAction(workspace: string, given: Record<string, string>): ActionRun {
  const inputs = Object.fromEntries(
    Object.entries(action.inputs).map(([name, { default: fallback = '' }]) => [name, given[name] ?? fallback]),
  );
  const temp = mkdtempSync(join(root, 'runner-'));
  let path = `${dirname(process.execPath)}:/usr/bin:/bin`;
  const stepOutputs: Record<string, Record<string, string>> = {};
  let log = '';
  for (const [index, step] of action.runs.steps.entries()) {
    if (step.uses !== undefined) {
      expect(step.uses).toMatch(/^actions\/setup-node@v\d+$/);
      expect(evaluate(step.with?.['node-version'] ?? '', inputs, stepOutputs)).toBe(inputs['node-version']);
      continue;
    }
    expect(step.shell).toBe('bash');
    const files = {
      output: join(temp, `output-${index}`),
      path: join(temp, `path-${index}`),
      env: join(temp, `env-${index}`),
    };
    for (const file of Object.values(files)) writeFileSync(file, '');
    const script = join(temp, `step-${index}.sh`);
    writeFileSync(script, step.run!);
    const run = spawnSync('bash', ['--noprofile', '--norc', '-eo', 'pipefail', script], {
      cwd: workspace,
      encoding: 'utf8',
      timeout: 120_000,
      env: {
        PATH: path,
        HOME: temp,
        CI: 'true',
        GITHUB_ACTIONS: 'true',
        GITHUB_WORKSPACE: workspace,
        GITHUB_ACTION_PATH: repoRoot,
        GITHUB_OUTPUT: files.output,
        GITHUB_PATH: files.path,
        GITHUB_ENV: files.env,
        RUNNER_TEMP: temp,
        ...Object.fromEntries(
          Object.entries(step.env ?? {}).map(([name, value]) => [name, evaluate(value, inputs, stepOutputs)]),
        ),
      },
    });
    log += run.stdout + run.stderr;
    if (step.id !== undefined) {
      stepOutputs[step.id] = Object.fromEntries(
        readFileSync(files.output, 'utf8')
          .split('\n')
          .filter((line) => line.includes('='))
          .map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)]),
      );
    }
    for (const added of readFileSync(files.path, 'utf8').split('\n').filter(Boolean)) path = `${added}:${path}`;
    if (run.status !== 0) return { failed: true, log, outputs: outputsOf(inputs, stepOutputs) };
  }
  return { failed: false, log, outputs: outputsOf(inputs, stepOutputs) };
}

function outputsOf(
  inputs: Record<string, string>,
  steps: Record<string, Record<string, string>>,
): Record<string, string> {
  return Object.fromEntries(
    Object.entries(action.outputs).map(([name, { value }]) => [name, evaluate(value, inputs, steps)]),
  );
}

/** A workspace holding the README's examples, as a repository of manifests would. */
function workspace(): string {
  const dir = mkdtempSync(join(root, 'workspace-'));
  cpSync(join(repoRoot, 'examples'), join(dir, 'manifests'), {
    recursive: true,
    filter: (source) => !source.includes(`${join('examples', 'chart')}`) && !source.endsWith('.md'),
  });
  return dir;
}

/** What the built CLI prints for the same check, run directly. */
function cli(args: string[], cwd: string): { status: number | null; stdout: string } {
  const run = spawnSync(process.execPath, [cliPath, ...args], { cwd, encoding: 'utf8' });
  return { status: run.status, stdout: run.stdout };
}

describe('the GitHub Action (action.yml), its steps run as a runner runs them', () => {
  it('is a composite action whose inputs reach its script only through the environment', () => {
    expect(action.runs.using).toBe('composite');
    for (const step of action.runs.steps) expect(step.run ?? '').not.toContain('${{');
  });

  it('checks the workspace (the default paths) and passes when nothing would be denied', () => {
    const dir = workspace();
    const run = runAction(dir, {});
    expect(run.failed, run.log).toBe(false);
    expect(run.outputs).toEqual({ 'exit-code': '0' });
    expect(run.log).toBe(cli(['check', '.'], dir).stdout);
  });

  it('fails the job on a denial, with the denial in the log and exit-code 1', () => {
    const dir = workspace();
    const run = runAction(dir, { paths: 'manifests/opted-out-hook.yaml', 'argocd-version': '3.1.0' });
    expect(run.failed).toBe(true);
    expect(run.outputs).toEqual({ 'exit-code': '1' });
    expect(run.log).toContain(DENIAL_AT_3_1_0);
    expect(run.log).toBe(cli(['check', 'manifests/opted-out-hook.yaml', '--argocd-version', '3.1.0'], dir).stdout);
  });

  it('audit mode reports the denial without failing; several paths; a shell pattern is a name, not expanded', () => {
    const dir = workspace();
    const run = runAction(dir, {
      paths: 'manifests/opted-out-hook.yaml manifests/fast-hook.yaml',
      'argocd-version': '3.1.0',
      mode: 'audit',
    });
    expect(run.failed, run.log).toBe(false);
    expect(run.log).toContain('opted-out-hook.yaml');
    expect(run.log).toContain('fast-hook.yaml');
    const pattern = runAction(dir, { paths: 'manifests/*.yaml' });
    expect([pattern.failed, pattern.outputs['exit-code']]).toEqual([true, '2']);
    expect(pattern.log).toContain('manifests/*.yaml');
  });

  it('writes a SARIF report to output-file for code scanning, and still fails on the denial', () => {
    const dir = workspace();
    const run = runAction(dir, {
      paths: 'manifests',
      'argocd-version': '3.1.0',
      output: 'sarif',
      'output-file': 'hookguard.sarif',
    });
    expect(run.failed).toBe(true);
    const sarif = JSON.parse(readFileSync(join(dir, 'hookguard.sarif'), 'utf8')) as {
      version: string;
      runs: unknown[];
    };
    expect(sarif.version).toBe('2.1.0');
    expect(readFileSync(join(dir, 'hookguard.sarif'), 'utf8')).toBe(
      cli(['check', 'manifests', '--argocd-version', '3.1.0', '--output', 'sarif'], dir).stdout,
    );
  });

  it('a value with shell syntax in an input is data, not a command', () => {
    const dir = workspace();
    const run = runAction(dir, { 'argocd-version': '$(touch pwned)' });
    expect(run.failed).toBe(true);
    expect(run.outputs).toEqual({ 'exit-code': '2' });
    expect(spawnSync('test', ['-e', join(dir, 'pwned')]).status).toBe(1);
  });
});

const preCommit = spawnSync('pre-commit', ['--version'], { encoding: 'utf8' });

// Debian's pre-commit (apt-get install pre-commit); .ci/run installs it.
describe.skipIf(preCommit.status !== 0 && process.env.CI === undefined)(
  'the pre-commit hooks (.pre-commit-hooks.yaml), run by pre-commit',
  () => {
    let repo: string;
    let bin: string;
    beforeAll(() => {
      repo = mkdtempSync(join(root, 'repo-'));
      bin = join(root, 'bin');
      mkdirSync(bin, { recursive: true });
      writeFileSync(join(bin, 'hookguard'), `#!/bin/sh\nexec '${process.execPath}' '${cliPath}' "$@"\n`, {
        mode: 0o755,
      });
      cpSync(join(repoRoot, 'examples'), join(repo, 'manifests'), {
        recursive: true,
        filter: (source) => !source.includes(`${join('examples', 'chart')}`) && !source.endsWith('.md'),
      });
      // Files the hooks must leave alone: no Kubernetes objects in them.
      mkdirSync(join(repo, 'chart', 'templates'), { recursive: true });
      writeFileSync(join(repo, 'chart', 'Chart.yaml'), 'apiVersion: v2\nname: c\nversion: 1.0.0\n');
      writeFileSync(join(repo, 'chart', 'values.yaml'), 'a: 1\n');
      writeFileSync(join(repo, 'chart', 'templates', 'job.yaml'), 'kind: Job\n{{ .Values.a }}\n');
      writeFileSync(join(repo, '.pre-commit-config.yaml'), 'repos: []\n');
      for (const args of [
        ['init', '-q'],
        ['add', '-A'],
        ['-c', 'user.email=t@example.com', '-c', 'user.name=t', 'commit', '-qm', 'manifests'],
      ]) {
        expect(spawnSync('git', args, { cwd: repo }).status).toBe(0);
      }
    });

    function tryRepo(hook: string, env: Record<string, string> = {}) {
      return spawnSync('pre-commit', ['try-repo', repoRoot, hook, '--all-files'], {
        cwd: repo,
        encoding: 'utf8',
        timeout: 600_000,
        env: {
          PATH: `${bin}:${dirname(process.execPath)}:/usr/bin:/bin`,
          HOME: root,
          PRE_COMMIT_HOME: join(root, 'pre-commit-home'),
          ...env,
        },
      });
    }

    it('hookguard-check: passes the manifests, skipping the chart, and fails on a denial saying why', () => {
      const passed = tryRepo('hookguard-check');
      expect(passed.status, passed.stdout + passed.stderr).toBe(0);
      expect(passed.stdout).toMatch(/hookguard check\.+Passed/);
      const denied = tryRepo('hookguard-check', { HOOKGUARD_ARGOCD_VERSION: '3.1.0' });
      expect(denied.status).toBe(1);
      expect(denied.stdout).toMatch(/hookguard check\.+Failed/);
      expect(denied.stdout).toContain(DENIAL_AT_3_1_0);
      expect(denied.stdout).not.toContain('chart/');
    });
  },
);
