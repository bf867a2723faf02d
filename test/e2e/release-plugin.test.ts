/**
 * What a release publishes, built here as the release workflow builds it (scripts/release-artifacts.sh, in a copy of
 * this checkout) and used as a user uses it: the npm tarball installed into a fresh prefix and run; the chart
 * rendered by the real helm 4.3.2; the Helm plugin installed by it, signed (a throwaway GnuPG key, its .prov checked
 * by Helm 4's default --verify) and unsigned (refused unless --verify=false), then run as a post-renderer. The release
 * workflow and the Action are checked with @action-validator/cli.
 */
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import semver from 'semver';
import { parse } from 'yaml';
import { helmAndKubectl, repoRoot } from '../support/k8s-tools.js';

const { version } = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string };
const VALIDATOR = join(repoRoot, 'node_modules', '.bin', 'action-validator');
const DENIAL_AT_3_1_0 =
  'deny   version-race [argocd-fast-hook-finalizer-race]: Job demo/migrate races with Argo CD 3.1.0';

let root: string;
let checkout: string;
let out: string;
let bin: string;
let gnupg: string;
let env: Record<string, string>;

function run(command: string, args: readonly string[], extra: Record<string, string> = {}, cwd = root) {
  return spawnSync(command, args, { cwd, encoding: 'utf8', env: { ...env, ...extra }, timeout: 300_000 });
}
function describeRun(result: SpawnSyncReturns<string>): string {
  return `exit ${String(result.status)}\n--- stderr ---\n${result.stderr}\n--- stdout ---\n${String(result.stdout).slice(0, 2000)}${result.error ? ` (${result.error.message})` : ''}`;
}

beforeAll(async () => {
  root = mkdtempSync(join(tmpdir(), 'hookguard-release-'));
  bin = join(root, 'bin');
  mkdirSync(bin);
  symlinkSync((await helmAndKubectl()).helm, join(bin, 'helm'));
  gnupg = join(root, 'gnupg');
  mkdirSync(gnupg, { mode: 0o700 });
  // This machine's environment (npm reaches the registry through it, proxies included), helm and gpg kept apart.
  env = {
    ...(process.env as Record<string, string>),
    PATH: `${bin}:${dirname(process.execPath)}:/usr/bin:/bin`,
    GNUPGHOME: gnupg,
    HELM_DATA_HOME: join(root, 'helm', 'data'),
    HELM_CONFIG_HOME: join(root, 'helm', 'config'),
    HELM_CACHE_HOME: join(root, 'helm', 'cache'),
    npm_config_update_notifier: 'false',
  };
  // A copy of the checkout, as the release workflow's: what git tracks (or would), and the installed node_modules.
  checkout = join(root, 'checkout');
  const tracked = spawnSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: repoRoot,
    encoding: 'utf8',
  }).stdout.split('\0');
  for (const file of tracked.filter(Boolean)) {
    if (existsSync(join(repoRoot, file)))
      cpSync(join(repoRoot, file), join(checkout, file), { verbatimSymlinks: true });
  }
  symlinkSync(join(repoRoot, 'node_modules'), join(checkout, 'node_modules'));
  // A throwaway signing key, in the legacy keyrings Helm reads.
  const key = run('gpg', [
    '--batch',
    '--passphrase',
    '',
    '--quick-gen-key',
    'hookguard release test <t@example.com>',
    'rsa2048',
    'sign',
    'never',
  ]);
  if (key.status !== 0) throw new Error(`gpg: ${describeRun(key)}`);
  const exported = run('sh', [
    '-c',
    'gpg --batch --export-secret-keys >"$0/secring.gpg" && gpg --batch --export >"$0/pubring.gpg"',
    gnupg,
  ]);
  if (exported.status !== 0) throw new Error(`gpg --export: ${describeRun(exported)}`);
  out = join(root, 'out');
  const built = run(join(checkout, 'scripts', 'release-artifacts.sh'), [out], {
    HELM_PLUGIN_SIGNING_KEY: 'hookguard release test',
    HELM_PLUGIN_KEYRING: join(gnupg, 'secring.gpg'),
  });
  if (built.status !== 0) throw new Error(`release-artifacts.sh: ${describeRun(built)}`);
}, 300_000);

afterAll(() => {
  if (root) rmSync(root, { recursive: true, force: true });
});

describe('the release workflow and the Action, validated', () => {
  it.each(['.github/workflows/release.yml', 'action.yml'])('%s is valid for GitHub (@action-validator/cli)', (file) => {
    const result = spawnSync(VALIDATOR, [join(repoRoot, file)], { encoding: 'utf8' });
    expect(result.status, describeRun(result)).toBe(0);
  });

  it('the validator fails on a workflow GitHub would refuse', () => {
    const broken = join(root, 'broken.yml');
    writeFileSync(
      broken,
      readFileSync(join(repoRoot, '.github/workflows/release.yml'), 'utf8').replace('runs-on:', 'run-on:'),
    );
    expect(spawnSync(VALIDATOR, [broken], { encoding: 'utf8' }).status).toBe(1);
  });

  it("sets up, before npm test, a Go no older than the cluster tools' go.mod files ask for", () => {
    const workflow = parse(readFileSync(join(repoRoot, '.github/workflows/release.yml'), 'utf8')) as {
      jobs: Record<string, { steps: { uses?: string; run?: string; with?: Record<string, unknown> }[] }>;
    };
    const steps = workflow.jobs.test!.steps;
    const setupGo = steps.findIndex((step) => step.uses?.startsWith('actions/setup-go@'));
    expect(setupGo).toBeGreaterThanOrEqual(0);
    expect(setupGo).toBeLessThan(steps.findIndex((step) => step.run?.includes('npm test')));
    const toolsDir = join(repoRoot, 'test', 'cluster', 'tools');
    const asked = readdirSync(toolsDir).map(
      (tool) => /^go (\S+)$/m.exec(readFileSync(join(toolsDir, tool, 'go.mod'), 'utf8'))![1]!,
    );
    const version = String(steps[setupGo]!.with?.['go-version']);
    for (const wanted of asked) expect(semver.gte(version, wanted), `go ${version} >= ${wanted}`).toBe(true);
  });

  it('builds the image for amd64 and arm64, and releases what scripts/release-artifacts.sh makes', () => {
    const workflow = parse(readFileSync(join(repoRoot, '.github/workflows/release.yml'), 'utf8')) as {
      jobs: Record<string, { steps: { uses?: string; run?: string; with?: Record<string, unknown> }[] }>;
    };
    const push = workflow.jobs.image!.steps.find((step) => step.uses?.startsWith('docker/build-push-action@'));
    expect(push?.with).toMatchObject({ platforms: 'linux/amd64,linux/arm64', push: true });
    expect(workflow.jobs.artifacts!.steps.map((step) => step.run ?? '').join('\n')).toContain(
      'scripts/release-artifacts.sh "$RUNNER_TEMP/release"',
    );
  });
});

describe('the npm tarball', () => {
  const tarball = () => join(out, 'npm', `hookguard-${version}.tgz`);

  it('holds the built CLI and its data, no sources or tests', () => {
    const files = run('tar', ['tzf', tarball()]).stdout.split('\n').filter(Boolean);
    expect(files).toContain('package/dist/cli/main.js');
    expect(files).toContain('package/data/advisories.yaml');
    expect(files).toContain('package/package.json');
    expect(files.filter((file) => /^package\/(src|test|charts|plugins)\//.test(file))).toEqual([]);
  });

  it('installs into a fresh prefix, and its hookguard check runs', () => {
    const prefix = join(root, 'prefix');
    const install = run('npm', [
      'install',
      '-g',
      '--prefix',
      prefix,
      '--prefer-offline',
      '--no-audit',
      '--no-fund',
      tarball(),
    ]);
    expect(install.status, describeRun(install)).toBe(0);
    const hookguard = join(prefix, 'bin', 'hookguard');
    expect(run(hookguard, ['--version']).stdout.trim()).toBe(version);
    const checked = run(hookguard, [
      'check',
      join(repoRoot, 'examples', 'opted-out-hook.yaml'),
      '--argocd-version',
      '3.1.0',
    ]);
    expect(checked.status).toBe(1);
    expect(checked.stdout).toContain(DENIAL_AT_3_1_0);
  }, 300_000);

  it('npm install -g of a checkout runs no install script, so npm has nothing to warn about', () => {
    const built = join(root, 'built-checkout');
    cpSync(checkout, built, { recursive: true, verbatimSymlinks: true });
    const install = run('npm', [
      'install',
      '-g',
      '--prefix',
      join(root, 'prefix-checkout'),
      '--no-audit',
      '--no-fund',
      built,
    ]);
    expect(install.status, describeRun(install)).toBe(0);
    expect(install.stderr).not.toMatch(/install-scripts|prepare/);
  }, 300_000);
});

describe('the chart package', () => {
  const chart = () => join(out, 'chart', `hookguard-${version}.tgz`);

  it('is the chart at the package version, and renders', () => {
    const shown = parse(run('helm', ['show', 'chart', chart()]).stdout) as { version: string; appVersion: string };
    expect([shown.version, shown.appVersion]).toEqual([version, version]);
    const rendered = run('helm', ['template', 'hookguard', chart(), '--namespace', 'hookguard']);
    expect(rendered.status, describeRun(rendered)).toBe(0);
    expect(rendered.stdout).toContain('kind: MutatingWebhookConfiguration');
  });
});

describe('the Helm plugin package', () => {
  const plugin = () => join(out, 'helm-plugin', `hookguard-${version}.tgz`);

  it('signed: Helm 4 installs it verifying its .prov against the key, and it runs as a post-renderer', () => {
    expect(existsSync(`${plugin()}.prov`)).toBe(true);
    const home = { HELM_DATA_HOME: join(root, 'signed', 'data'), HELM_CONFIG_HOME: join(root, 'signed', 'config') };
    const install = run('helm', ['plugin', 'install', plugin(), '--keyring', join(gnupg, 'pubring.gpg')], home);
    expect(install.status, describeRun(install)).toBe(0);
    expect(install.stdout).toContain('Signed by: hookguard release test <t@example.com>');
    expect(run('helm', ['plugin', 'list'], home).stdout).toMatch(
      /^hookguard\s+0\.1\.0\s+postrenderer\/v1\s+v1\s+signed\s/m,
    );
    const prefix = join(root, 'prefix');
    const rendered = run(
      'helm',
      ['template', 'rel', join(repoRoot, 'test', 'e2e', 'chart'), '--post-renderer', 'hookguard'],
      { ...home, HOOKGUARD_BIN: join(prefix, 'bin', 'hookguard') },
    );
    expect(rendered.status, describeRun(rendered)).toBe(0);
    expect(rendered.stdout).toContain('helm.sh/hook-output-log-policy: hook-failed');
  });

  it('unsigned: Helm 4 refuses it by default (--verify), and installs it with --verify=false', () => {
    const unsigned = join(root, 'unsigned');
    const packed = run('helm', [
      'plugin',
      'package',
      join(checkout, 'plugins', 'helm-hookguard'),
      '--sign=false',
      '-d',
      unsigned,
    ]);
    expect(packed.status, describeRun(packed)).toBe(0);
    const home = { HELM_DATA_HOME: join(unsigned, 'data'), HELM_CONFIG_HOME: join(unsigned, 'config') };
    const refused = run('helm', ['plugin', 'install', join(unsigned, `hookguard-${version}.tgz`)], home);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain('Error: plugin verification failed: no provenance file (.prov) found');
    const installed = run(
      'helm',
      ['plugin', 'install', join(unsigned, `hookguard-${version}.tgz`), '--verify=false'],
      home,
    );
    expect(installed.status, describeRun(installed)).toBe(0);
  });
});
