/**
 * End to end at render time, where Helm and Argo CD read a hook's delete policy, with the real helm 4.3.2
 * (test/support/k8s-tools.ts) and this checkout's built hookguard (dist/cli/main.js, through a `hookguard` wrapper on
 * PATH, as a user who installed it has one):
 *
 * - the Helm 4 post-renderer plugin (plugins/helm-hookguard), installed with `helm plugin install` into a temporary
 *   Helm home and run as `helm template --post-renderer hookguard` on test/e2e/chart;
 * - the Argo CD Config Management Plugin's init and generate commands (manifests/argocd-cmp/plugin.yaml), run in a
 *   real bash in a copy of the chart with the environment Argo CD's repo-server gives them.
 *
 * Helm 4 re-serialises every document (kyaml) whenever a post-renderer runs, before and after it, so the plugin's
 * output is compared with a pass-through (`cat`) post-renderer's: its non-hook documents byte for byte, its hooks
 * as parsed objects with exactly the expected JSON Patch applied. The CMP pipes `helm template` straight into
 * hookguard, so there its non-hook documents are compared byte for byte with plain `helm template`.
 */
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import {
  cpSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  realpathSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse, parseAllDocuments } from 'yaml';
import { applyPatch, type Operation } from '../../src/core/json-patch.js';
import type { KubeObject } from '../../src/core/types.js';
import { cliPath } from '../support/cli.js';
import { runCommand } from '../support/command.js';
import { helm3, helmAndKubectl, repoRoot, toolsOrSkip, type K8sTools } from '../support/k8s-tools.js';
import { DEFAULT_GUARD_CONTAINER } from '../support/objects.js';

const CHART = join(repoRoot, 'test', 'e2e', 'chart');
/** The README's chart whose post-install hook Pod says restartPolicy: Always, which hookguard denies at render time. */
const DENIED_CHART = join(repoRoot, 'examples', 'chart');
const RESTART_ALWAYS =
  'restartPolicy Always keeps this hook from ever finishing: its containers restart after they exit, so the Pod never reaches Succeeded (Helm waits until its timeout; Argo CD counts it done once it runs, before its command ends). Set restartPolicy: Never';
/** What the person running helm must read: the object, the rule, why, the fix, and the template it came from. */
const HELM_DENIAL = `hookguard check: Pod rel-wait denied by hook-pod-restart-policy: Pod rel-wait: ${RESTART_ALWAYS}
  at stdin:1 (document 1, template denied-hook/templates/wait-pod.yaml): apiVersion: v1
`;
/** All Helm 4.3.2 itself says when a post-renderer plugin fails (internal/plugin/runtime_subprocess.go executeCmd). */
const HELM_PLUGIN_FAILED =
  'Error: error while running post render on files: failed to invoke post-renderer plugin "hookguard": plugin "hookguard" exited with error\n';
const NOT_ON_PATH = 'hookguard is not on PATH (set HOOKGUARD_BIN to the hookguard executable)';
const PLUGIN_DIR = join(repoRoot, 'plugins', 'helm-hookguard');
const CMP_PLUGIN = join(repoRoot, 'manifests', 'argocd-cmp', 'plugin.yaml');
// A version with the fast hook-finalizer race: hookguard adds its guard there.
const GUARDED_VERSION = '3.1.0';

// ---------------------------------------------------------------------------
// What hookguard adds to test/e2e/chart at render time, for plain Helm (the exact JSON Patch of each document).

const CLEANUP_SCRIPT = 'kubectl delete configmap rel-state -n demo\necho done\n';
// hook-deadline sets no deadline by default (it names the missing one): no op of its own below.
/** hook-output-log-policy: Helm (3.18+, 4) prints a failed hook's logs. */
const OUTPUT_LOG_POLICY: Operation = {
  op: 'add',
  path: '/metadata/annotations/helm.sh~1hook-output-log-policy',
  value: 'hook-failed',
};
const HELM_PATCHES: Record<string, Operation[]> = {
  'ConfigMap/rel-state': [],
  'Job/rel-cleanup': [
    {
      op: 'add',
      path: '/metadata/annotations/helm.sh~1hook-delete-policy',
      value: 'before-hook-creation,hook-succeeded',
    },
    OUTPUT_LOG_POLICY,
    {
      op: 'replace',
      path: '/spec/template/spec/containers/0/args/0',
      value: CLEANUP_SCRIPT.replace('delete', 'delete --ignore-not-found'),
    },
    { op: 'replace', path: '/spec/backoffLimit', value: 3 },
  ],
  // Its own policy kept; its TTL of 0 raised to the floor (Helm 4 waits until --timeout for a hook Job its TTL
  // deleted before Helm saw it finish).
  'Job/rel-pre-upgrade': [{ op: 'replace', path: '/spec/ttlSecondsAfterFinished', value: 60 }, OUTPUT_LOG_POLICY],
};
/**
 * At an Argo CD version that races, the pre-upgrade Job (a sync hook) gets the guard too. The post-delete cleanup
 * Job does not: Argo CD creates delete-phase hooks without its hook finalizer (argo-cd controller/hook.go
 * executeHooks), so it gets what plain Helm's gets but the output log policy, which Argo CD never reads.
 */
const GUARD: Operation = { op: 'add', path: '/spec/template/spec/initContainers', value: [DEFAULT_GUARD_CONTAINER] };
/** The pre-upgrade Job at that version: the guard; no output log policy (Argo CD never reads it). */
const GUARDED_PRE_UPGRADE: Operation[] = [
  ...HELM_PATCHES['Job/rel-pre-upgrade']!.filter((op) => op !== OUTPUT_LOG_POLICY),
  GUARD,
];

// ---------------------------------------------------------------------------

interface Document {
  key: string;
  /** The document's text, from its `# Source:` line to the next separator. */
  text: string;
  object: KubeObject;
}

function documentsOf(stream: string): Document[] {
  return parseAllDocuments(stream).map((document, index) => {
    if (document.errors.length > 0) throw new Error(`document ${index + 1}: ${document.errors[0]?.message}`);
    const object = document.toJS() as KubeObject;
    const metadata = object.metadata as { name: string };
    return {
      key: `${String(object.kind)}/${metadata.name}`,
      text: stream.slice(document.range[0], document.range[2]),
      object,
    };
  });
}

function byKey(documents: readonly Document[]): Record<string, Document> {
  return Object.fromEntries(documents.map((document) => [document.key, document]));
}

function patched(object: KubeObject, patch: readonly Operation[]): KubeObject {
  // validateOperation: an op that does not apply cleanly (a `replace` of a missing member) throws.
  return applyPatch(structuredClone(object), [...patch], true, false).newDocument;
}

function describeRun(run: SpawnSyncReturns<string>): string {
  return `exit ${String(run.status)}${run.error ? ` (${run.error.message})` : ''}\n--- stderr ---\n${run.stderr}\n--- stdout ---\n${run.stdout.slice(0, 3000)}`;
}

const tools: K8sTools | undefined = await toolsOrSkip('render-time e2e', helmAndKubectl);

let root: string;
let bin: string;
let helmHome: string;

/** The environment of each process: nothing of this machine's but PATH's system folders, so no HELM_* or HOOKGUARD_* leaks in. */
function environment(extra: Record<string, string> = {}, path = `${bin}:/usr/bin:/bin`): Record<string, string> {
  return {
    PATH: path,
    HOME: root,
    HELM_DATA_HOME: join(helmHome, 'data'),
    HELM_CONFIG_HOME: join(helmHome, 'config'),
    HELM_CACHE_HOME: join(helmHome, 'cache'),
    ...extra,
  };
}

function helm(args: readonly string[], extra: Record<string, string> = {}, path?: string): SpawnSyncReturns<string> {
  return spawnSync(tools!.helm, args, { encoding: 'utf8', env: environment(extra, path), timeout: 60_000 });
}

/**
 * helm with its stdout and stderr into one real pipe (`2>&1 | cat`), as a CI runner or a terminal multiplexer reads
 * it. (Node's own stdio "pipes" are socket pairs, which no other process can open through /proc/PID/fd.)
 */
function helmThroughPipe(args: readonly string[], extra: Record<string, string> = {}, path?: string) {
  return spawnSync('/bin/bash', ['-c', 'set -o pipefail; "$0" "$@" 2>&1 | cat', tools!.helm, ...args], {
    encoding: 'utf8',
    env: environment(extra, path),
    timeout: 60_000,
  });
}

function helmTemplate(postRenderer: string, extra: Record<string, string> = {}, more: string[] = []): string {
  const run = helm(['template', 'rel', CHART, '-n', 'demo', '--post-renderer', postRenderer, ...more], extra);
  if (run.status !== 0) throw new Error(`helm template --post-renderer ${postRenderer}: ${describeRun(run)}`);
  return run.stdout;
}

/** What `hookguard check --fix -` makes of `stream`, in process: what the plugins must deliver, exactly. */
async function checkFix(stream: string, env: Record<string, string>): Promise<Document[]> {
  const run = await runCommand(['check', '--fix', '-'], stream, env);
  if (run.status !== 0) throw new Error(`check --fix: ${run.stderr}`);
  return documentsOf(run.stdout);
}

beforeAll(() => {
  if (!tools) return;
  root = mkdtempSync(join(tmpdir(), 'hookguard-render-time-'));
  bin = join(root, 'bin');
  helmHome = join(root, 'helm');
  mkdirSync(bin);
  // This checkout's hookguard, and the real helm, as a user has them on PATH.
  writeFileSync(join(bin, 'hookguard'), `#!/bin/sh\nexec '${process.execPath}' '${cliPath}' "$@"\n`, { mode: 0o755 });
  symlinkSync(tools.helm, join(bin, 'helm'));
  // The pass-through post-renderer the plugin's output is compared with.
  const passthrough = join(root, 'passthrough');
  mkdirSync(passthrough);
  writeFileSync(
    join(passthrough, 'plugin.yaml'),
    'apiVersion: v1\nname: passthrough\ntype: postrenderer/v1\nruntime: subprocess\nversion: 1.0.0\nruntimeConfig:\n  platformCommand:\n    - command: cat\n',
  );
  for (const plugin of [PLUGIN_DIR, passthrough]) {
    const run = helm(['plugin', 'install', plugin]);
    if (run.status !== 0) throw new Error(`helm plugin install ${plugin}: ${describeRun(run)}`);
  }
});

afterAll(() => {
  if (root) rmSync(root, { recursive: true, force: true });
});

describe.skipIf(!tools)('the Helm 4 post-renderer plugin (real helm)', () => {
  it('is run by Helm 4, which passes hooks through post-renderers', () => {
    const run = helm(['version', '--template', '{{.Version}}']);
    expect(run.stdout).toMatch(/^v4\.\d+\.\d+$/);
  });

  it('installs from this repository into $HELM_DATA_HOME/plugins (Helm 4 ignores HELM_PLUGINS there)', () => {
    const list = helm(['plugin', 'list']);
    expect(list.stdout.split('\n').filter((line) => line.startsWith('hookguard'))).toEqual([
      expect.stringMatching(/^hookguard\s+0\.1\.0\s+postrenderer\/v1\s+v1\s/),
    ]);
    expect(realpathSync(join(helmHome, 'data', 'plugins', 'helm-hookguard'))).toBe(realpathSync(PLUGIN_DIR));
  });

  it('versions with the package', () => {
    const { version } = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as { version: string };
    expect((parse(readFileSync(join(PLUGIN_DIR, 'plugin.yaml'), 'utf8')) as { version: string }).version).toBe(version);
  });

  describe('plain Helm', () => {
    let baseline: Document[];
    let output: Document[];
    beforeAll(() => {
      baseline = documentsOf(helmTemplate('passthrough'));
      output = documentsOf(helmTemplate('hookguard'));
    });

    it('keeps every document, in order, under its template', () => {
      expect(output.map((document) => document.key)).toEqual([
        'ConfigMap/rel-state',
        'Job/rel-cleanup',
        'Job/rel-pre-upgrade',
      ]);
      expect(output.map((document) => document.text.split('\n')[0])).toEqual(
        baseline.map((document) => document.text.split('\n')[0]),
      );
    });

    it('leaves the non-hook ConfigMap byte for byte as the pass-through post-renderer does', () => {
      expect(byKey(output)['ConfigMap/rel-state']!.text).toBe(byKey(baseline)['ConfigMap/rel-state']!.text);
    });

    it('gives the hooks exactly their delete policy, idempotent deletes, retries and TTL floor', () => {
      const before = byKey(baseline);
      expect(Object.fromEntries(output.map((document) => [document.key, document.object]))).toEqual(
        Object.fromEntries(
          Object.entries(HELM_PATCHES).map(([key, patch]) => [key, patched(before[key]!.object, patch)]),
        ),
      );
    });

    // Helm gives a post-renderer no version of its own (helm v4.2.1 internal/plugin/runtime_subprocess.go
    // runPostrenderer): the plugin asks the helm that runs it. The real helm here is 4.3.2, not 4.2.1, so the cleanup
    // Job got hook-succeeded above; told 4.2.1 (helm-hook-delete-wait), the plugin leaves it out and hook-ttl adds a TTL.
    it('asks the helm running it for its version, and leaves hook-succeeded out under Helm 4.2.1', () => {
      const version = helm(['version', '--template', '{{.Version}}']);
      expect(version.stdout).toBe('v4.3.2');
      const told = documentsOf(helmTemplate('hookguard', { HOOKGUARD_HELM_VERSION: '4.2.1' }));
      const [, ...rest] = HELM_PATCHES['Job/rel-cleanup']!;
      expect(byKey(told)['Job/rel-cleanup']!.object).toEqual(
        patched(byKey(baseline)['Job/rel-cleanup']!.object, [
          { op: 'add', path: '/metadata/annotations/helm.sh~1hook-delete-policy', value: 'before-hook-creation' },
          { op: 'add', path: '/spec/ttlSecondsAfterFinished', value: 86400 },
          ...rest,
        ]),
      );
      expect(byKey(told)['Job/rel-pre-upgrade']!.object).toEqual(byKey(output)['Job/rel-pre-upgrade']!.object);
    });

    it('finds hookguard through HOOKGUARD_BIN as through PATH', () => {
      const viaBin = helm(
        ['template', 'rel', CHART, '-n', 'demo', '--post-renderer', 'hookguard'],
        { HOOKGUARD_BIN: join(bin, 'hookguard') },
        '/usr/bin:/bin',
      );
      expect(viaBin.status, describeRun(viaBin)).toBe(0);
      expect(documentsOf(viaBin.stdout)).toEqual(output);
    });
  });

  describe(`told Argo CD ${GUARDED_VERSION} applies the result`, () => {
    let baselineText: string;
    let output: Document[];
    beforeAll(() => {
      baselineText = helmTemplate('passthrough');
      output = documentsOf(helmTemplate('hookguard', { HOOKGUARD_ARGOCD_VERSION: GUARDED_VERSION }));
    });

    it('adds the guard to the pre-upgrade hook beside its TTL floor, and none to the post-delete cleanup hook', () => {
      const before = byKey(documentsOf(baselineText));
      expect(byKey(output)['Job/rel-pre-upgrade']!.object).toEqual(
        patched(before['Job/rel-pre-upgrade']!.object, GUARDED_PRE_UPGRADE),
      );
      expect(byKey(output)['Job/rel-cleanup']!.object).toEqual(
        patched(
          before['Job/rel-cleanup']!.object,
          HELM_PATCHES['Job/rel-cleanup']!.filter((op) => op !== OUTPUT_LOG_POLICY),
        ),
      );
    });

    it('delivers exactly what hookguard check --fix makes of the same stream', async () => {
      const expected = await checkFix(baselineText, { HOOKGUARD_ARGOCD_VERSION: GUARDED_VERSION });
      expect(output.map((document) => document.object)).toEqual(expected.map((document) => document.object));
      expect(byKey(output)['ConfigMap/rel-state']!.text).toBe(
        byKey(documentsOf(baselineText))['ConfigMap/rel-state']!.text,
      );
    });

    it('takes --post-renderer-args as arguments of hookguard check', () => {
      const viaArgs = helmTemplate('hookguard', {}, [
        '--post-renderer-args',
        '--argocd-version',
        '--post-renderer-args',
        GUARDED_VERSION,
      ]);
      expect(documentsOf(viaArgs)).toEqual(output);
    });
  });

  it('fails the render when hookguard fails, rather than apply what it did not check', () => {
    const run = helmThroughPipe(['template', 'rel', CHART, '--post-renderer', 'hookguard'], {
      HOOKGUARD_BIN: join(root, 'missing'),
    });
    expect(run.status).toBe(1);
    expect(
      run.stdout.startsWith(
        `helm-hookguard: HOOKGUARD_BIN=${join(root, 'missing')} is not an executable: set it to hookguard's path\n${HELM_PLUGIN_FAILED}`,
      ),
      describeRun(run),
    ).toBe(true);
  });

  it('names a HOOKGUARD_BIN that exists but cannot be run (a built main.js without its execute bit)', () => {
    const notExecutable = join(root, 'main.js');
    writeFileSync(notExecutable, '#!/usr/bin/env node\n', { mode: 0o644 });
    const run = helmThroughPipe(['template', 'rel', CHART, '--post-renderer', 'hookguard'], {
      HOOKGUARD_BIN: notExecutable,
    });
    expect(run.status).toBe(1);
    expect(
      run.stdout.startsWith(
        `helm-hookguard: HOOKGUARD_BIN=${notExecutable} is not an executable: set it to hookguard's path\n${HELM_PLUGIN_FAILED}`,
      ),
      describeRun(run),
    ).toBe(true);
  });

  // Helm 4.3.2 drops a post-renderer plugin's stderr: the plugin writes to Helm's own stderr instead.
  describe('says why the render failed where Helm prints its errors', () => {
    it("a hook it denies: the object, the rule, why, the fix and the template, before Helm's error (a pipe, as in CI)", () => {
      const run = helmThroughPipe(['template', 'rel', DENIED_CHART, '--post-renderer', 'hookguard']);
      expect(run.status, describeRun(run)).toBe(1);
      expect(run.stdout.startsWith(`${HELM_DENIAL}${HELM_PLUGIN_FAILED}`), describeRun(run)).toBe(true);
    });

    it('hookguard missing from PATH', () => {
      const run = helmThroughPipe(['template', 'rel', CHART, '--post-renderer', 'hookguard'], {}, '/usr/bin:/bin');
      expect(run.status).toBe(1);
      expect(run.stdout.startsWith(`helm-hookguard: ${NOT_ON_PATH}\n${HELM_PLUGIN_FAILED}`), describeRun(run)).toBe(
        true,
      );
    });

    it("a file helm's stderr is appended to", () => {
      const log = join(root, 'helm-errors.log');
      writeFileSync(log, 'earlier line\n');
      const run = spawnSync(
        '/bin/sh',
        ['-c', `exec "$0" template rel "$1" --post-renderer hookguard 2>>"$2"`, tools!.helm, DENIED_CHART, log],
        { encoding: 'utf8', env: environment(), timeout: 60_000 },
      );
      expect(run.status).toBe(1);
      expect(readFileSync(log, 'utf8').startsWith(`earlier line\n${HELM_DENIAL}${HELM_PLUGIN_FAILED}`)).toBe(true);
    });

    // `2>err.log` opens the file without O_APPEND: Helm writes its error at its own offset, over what the plugin
    // appended, so the plugin's message goes after a blank line Helm's error lands on.
    it("a file helm's stderr was opened on (2>, not appended): Helm's error does not overwrite the reason", () => {
      const log = join(root, 'helm-errors-truncated.log');
      writeFileSync(log, 'earlier run, truncated by 2>\n');
      const run = spawnSync(
        '/bin/sh',
        ['-c', `exec "$0" template rel "$1" --post-renderer hookguard 2>"$2"`, tools!.helm, DENIED_CHART, log],
        { encoding: 'utf8', env: environment(), timeout: 60_000 },
      );
      expect(run.status).toBe(1);
      const helmSays = `${HELM_PLUGIN_FAILED}\nUse --debug flag to render out invalid YAML\n`;
      expect(readFileSync(log, 'utf8')).toBe(`${helmSays}${' '.repeat(511 - helmSays.length)}\n${HELM_DENIAL}`);
    });

    // script(1) (util-linux) runs helm on a pseudo-terminal, as in an interactive shell.
    it.skipIf(spawnSync('script', ['--version']).status !== 0)('an interactive terminal', () => {
      const run = spawnSync(
        'script',
        ['-qec', `"${tools!.helm}" template rel "${DENIED_CHART}" --post-renderer hookguard`, '/dev/null'],
        { encoding: 'utf8', env: environment(), timeout: 60_000 },
      );
      const terminal = run.stdout.replaceAll('\r\n', '\n');
      expect(terminal.startsWith(`${HELM_DENIAL}${HELM_PLUGIN_FAILED}`), terminal).toBe(true);
    });
  });
});

/**
 * Which Helm runs the plugin: its parent, trusted as Helm only when its executable's Go build information names
 * Helm's main package, and never run otherwise. Each parent runs bin/postrender in a folder holding an executable
 * `version`, with another on PATH (what a shell would run for `<parent> version`): both leave a mark. hookguard is a
 * stand-in that records the HOOKGUARD_HELM_VERSION it was given.
 */
describe.skipIf(!tools)('the Helm 4 post-renderer plugin: which Helm runs it', () => {
  let work: string;
  let marks: string;
  let given: string;
  let env: Record<string, string>;
  const postrender = join(PLUGIN_DIR, 'bin', 'postrender');
  const BUILD_INFO = (version: string) => `\npath\thelm.sh/helm/v4/cmd/helm\nmod\thelm.sh/helm/v4\t${version}\t\n`;

  beforeAll(() => {
    work = join(root, 'which-helm');
    const onPath = join(work, 'on-path');
    mkdirSync(onPath, { recursive: true });
    marks = join(work, 'marks');
    given = join(work, 'given');
    const version = (where: string) => `#!/bin/sh\necho ${where} >>'${marks}'\necho v4.1.9junk\n`;
    writeFileSync(join(work, 'version'), version('cwd'), { mode: 0o755 });
    writeFileSync(join(onPath, 'version'), version('on-path'), { mode: 0o755 });
    writeFileSync(
      join(work, 'hookguard'),
      `#!/bin/sh\nprintf %s "\${HOOKGUARD_HELM_VERSION-unset}" >'${given}'\nexec cat\n`,
      {
        mode: 0o755,
      },
    );
    env = environment({ HOOKGUARD_BIN: join(work, 'hookguard') }, `${bin}:${onPath}:/usr/bin:/bin`);
  });

  /** Runs bin/postrender as the child of `parent` (a copy of bash), in the folder with `version`. */
  function underParent(parent: string, buildInfo = ''): { marks: string; given: string } {
    rmSync(marks, { force: true });
    rmSync(given, { force: true });
    cpSync('/bin/bash', parent);
    if (buildInfo) writeFileSync(parent, buildInfo, { flag: 'a' });
    // Two commands, so bash runs postrender as its child rather than exec'ing it.
    const run = spawnSync(parent, ['-c', '"$0" </dev/null; exit $?', postrender], {
      cwd: work,
      encoding: 'utf8',
      env,
      timeout: 60_000,
    });
    expect(run.status, describeRun(run)).toBe(0);
    return { marks: existsSync(marks) ? readFileSync(marks, 'utf8') : '', given: readFileSync(given, 'utf8') };
  }

  it('never runs a parent named helm* that is not Helm (a bash copy named helm-runner)', () => {
    expect(underParent(join(work, 'helm-runner'))).toEqual({ marks: '', given: 'unset' });
  });

  it("reads Helm's version from its build information, running nothing", () => {
    expect(underParent(join(work, 'helm'), BUILD_INFO('v4.1.9'))).toEqual({ marks: '', given: 'v4.1.9' });
  });

  it('keeps only an exact vX.Y.Z: trailing junk in the build information or in `helm version` is dropped', () => {
    // Not exact in the build information: the proven Helm is asked (here its `version` is the one on PATH).
    expect(underParent(join(work, 'helm'), BUILD_INFO('v4.1.9junk'))).toEqual({
      marks: 'on-path\n',
      given: 'unset',
    });
  });

  it('the real helm 4.3.2 and helm 3.21.4 (from their build information), and a helm 3.21.4 whose build says (devel) (asked)', async () => {
    const standIn = { HOOKGUARD_BIN: join(work, 'hookguard') };
    const helm4 = helm(['template', 'rel', CHART, '--post-renderer', 'hookguard'], standIn);
    expect(helm4.status, describeRun(helm4)).toBe(0);
    expect(readFileSync(given, 'utf8')).toBe('v4.3.2');
    const helm3Release = await helm3();
    // A build from a Helm checkout names its module `(devel)` where a build of the released module names the version:
    // the same helm 3.21.4 with its build information (both copies in the executable) saying so.
    const helm3Devel = join(work, 'helm3-devel');
    const released = '\nmod\thelm.sh/helm/v3\tv3.21.4\t';
    const executable = readFileSync(helm3Release, 'latin1');
    expect(executable.split(released).length - 1).toBe(2);
    writeFileSync(helm3Devel, executable.replaceAll(released, '\nmod\thelm.sh/helm/v3\t(devel)\t'), {
      encoding: 'latin1',
      mode: 0o755,
    });
    for (const helm3Binary of [helm3Release, helm3Devel]) {
      rmSync(given, { force: true });
      const helm3Run = spawnSync(helm3Binary, ['template', 'rel', CHART, '--post-renderer', postrender], {
        encoding: 'utf8',
        env: environment(standIn),
        timeout: 60_000,
      });
      expect(helm3Run.status, describeRun(helm3Run)).toBe(0);
      expect(readFileSync(given, 'utf8')).toBe('v3.21.4');
    }
  });
});

// ---------------------------------------------------------------------------

interface Command {
  command: string[];
  args?: string[];
}

/** One of plugin.yaml's commands, run as argocd-cmp-server runs it: exec'd, no shell around it, in the app's folder. */
function runPluginCommand(
  which: 'init' | 'generate',
  app: string,
  env: Record<string, string>,
): SpawnSyncReturns<string> {
  const plugin = parse(readFileSync(CMP_PLUGIN, 'utf8')) as {
    kind: string;
    metadata: { name: string };
    spec: Record<'init' | 'generate', Command>;
  };
  const { command, args = [] } = plugin.spec[which];
  return spawnSync(command[0]!, [...command.slice(1), ...args], {
    cwd: app,
    encoding: 'utf8',
    env: { PATH: `${bin}:/usr/bin:/bin`, HOME: root, ...env },
    timeout: 60_000,
  });
}

/** What Argo CD's repo-server sets for an Application's plugin commands (argo-cd v3.4.0 repository.go newEnv, getPluginEnvs). */
const ARGOCD_ENV = {
  ARGOCD_APP_NAME: 'rel',
  ARGOCD_APP_NAMESPACE: 'demo',
  ARGOCD_APP_PROJECT_NAME: 'default',
  ARGOCD_APP_REVISION: '0123456789abcdef0123456789abcdef01234567',
  ARGOCD_APP_REVISION_SHORT: '0123456',
  ARGOCD_APP_REVISION_SHORT_8: '01234567',
  ARGOCD_APP_SOURCE_REPO_URL: 'https://git.example.com/charts.git',
  ARGOCD_APP_SOURCE_PATH: 'e2e-hooks',
  ARGOCD_APP_SOURCE_TARGET_REVISION: 'HEAD',
  KUBE_VERSION: '1.30.0',
  KUBE_API_VERSIONS: 'v1,batch/v1,apps/v1',
};

describe.skipIf(!tools)('the Argo CD Config Management Plugin (real helm, real bash)', () => {
  let app: string;
  let plain: string;
  let generated: SpawnSyncReturns<string>;
  /** The sidecar's HOOKGUARD_ARGOCD_VERSION, as the image built for that Argo CD sets it. */
  const told = { ...ARGOCD_ENV, HOOKGUARD_ARGOCD_VERSION: GUARDED_VERSION };

  beforeAll(() => {
    app = join(root, 'app');
    cpSync(CHART, app, { recursive: true });
    const run = helm(['template', 'rel', app, '--namespace', 'demo', '--include-crds', '--kube-version', '1.30.0']);
    if (run.status !== 0) throw new Error(`helm template: ${describeRun(run)}`);
    plain = run.stdout;
    generated = runPluginCommand('generate', app, told);
  });

  it('is a ConfigManagementPlugin named hookguard-helm', () => {
    expect(parse(readFileSync(CMP_PLUGIN, 'utf8'))).toMatchObject({
      apiVersion: 'argoproj.io/v1alpha1',
      kind: 'ConfigManagementPlugin',
      metadata: { name: 'hookguard-helm' },
    });
  });

  it('init succeeds on a chart without dependencies and prints nothing on stdout', () => {
    const run = runPluginCommand('init', app, told);
    expect([run.status, run.stdout], describeRun(run)).toEqual([0, '']);
  });

  it('generate prints the chart with hookguard applied, and nothing on stderr', () => {
    expect([generated.status, generated.stderr], describeRun(generated)).toEqual([0, '']);
    const output = documentsOf(generated.stdout);
    expect(output.map((document) => document.key)).toEqual([
      'ConfigMap/rel-state',
      'Job/rel-cleanup',
      'Job/rel-pre-upgrade',
    ]);
    // No post-renderer in between: the non-hook document is helm template's own text.
    expect(byKey(output)['ConfigMap/rel-state']!.text).toBe(byKey(documentsOf(plain))['ConfigMap/rel-state']!.text);
    expect(byKey(output)['Job/rel-pre-upgrade']!.object).toEqual(
      patched(byKey(documentsOf(plain))['Job/rel-pre-upgrade']!.object, GUARDED_PRE_UPGRADE),
    );
  });

  it('generate delivers exactly what hookguard check --fix makes of helm template at that version', async () => {
    const expected = await checkFix(plain, { HOOKGUARD_ARGOCD_VERSION: GUARDED_VERSION });
    expect(documentsOf(generated.stdout).map((document) => document.object)).toEqual(
      expected.map((document) => document.object),
    );
  });

  it.each([
    [
      "the sidecar's, when the Application's plugin env names the same version",
      { ...told, ARGOCD_ENV_HOOKGUARD_ARGOCD_VERSION: GUARDED_VERSION },
    ],
    ['a namespaced Application name (apps in any namespace)', { ...told, ARGOCD_APP_NAME: 'team-a_rel' }],
  ])('takes the version and release the same way from %s', (_name, env) => {
    const run = runPluginCommand('generate', app, env);
    expect(run.status, describeRun(run)).toBe(0);
    expect(run.stdout).toBe(generated.stdout);
  });

  it('passes the plugin env HELM_ARGS to helm template', () => {
    const run = runPluginCommand('generate', app, {
      ...told,
      ARGOCD_ENV_HELM_ARGS: '--set cleanup.image=bitnami/kubectl:1.33.0',
    });
    expect(run.status, describeRun(run)).toBe(0);
    const cleanup = byKey(documentsOf(run.stdout))['Job/rel-cleanup']!.object as {
      spec: { template: { spec: { containers: { image: string }[] } } };
    };
    expect(cleanup.spec.template.spec.containers[0]!.image).toBe('bitnami/kubectl:1.33.0');
  });

  it.each([
    ['none at all', ARGOCD_ENV],
    ["only the Application's plugin env", { ...ARGOCD_ENV, ARGOCD_ENV_HOOKGUARD_ARGOCD_VERSION: GUARDED_VERSION }],
  ])('refuses to guess the Argo CD version from %s: no manifests, and a message saying what to set', (_, env) => {
    const run = runPluginCommand('generate', app, env);
    expect([run.status, run.stdout, run.stderr]).toEqual([
      1,
      '',
      'hookguard-helm: which Argo CD applies this? Set HOOKGUARD_ARGOCD_VERSION on the sidecar (the image built for your Argo CD sets it)\n',
    ]);
  });

  it('an Application naming another version cannot turn the version-gated fixes off for itself: refused', () => {
    const run = runPluginCommand('generate', app, { ...told, ARGOCD_ENV_HOOKGUARD_ARGOCD_VERSION: '3.5.1' });
    expect([run.status, run.stdout, run.stderr]).toEqual([
      1,
      '',
      `hookguard-helm: the Application's plugin env HOOKGUARD_ARGOCD_VERSION is 3.5.1, but this plugin renders for Argo CD ${GUARDED_VERSION}: only the plugin's configuration sets the version (it turns fixes on and off); remove it from the Application\n`,
    ]);
  });

  // argocd-cmp-server reports a failed generate as "`bash -c …` failed exit status 1: <its stderr, trimmed>" (argo-cd
  // v3.4.0 cmpserver/plugin/plugin.go CmdError), and that is the Application's ComparisonError condition.
  it('a hook it denies: fails, and stderr, what Argo CD shows, says what, which rule, why, the fix and where', () => {
    const denied = join(root, 'denied-app');
    cpSync(DENIED_CHART, denied, { recursive: true });
    const run = runPluginCommand('generate', denied, told);
    // Argo CD uses no output of a failed command.
    expect(run.status).toBe(1);
    expect(run.stderr).toBe(
      `hookguard check: Pod rel-wait denied by hook-pod-restart-policy: Pod rel-wait: ${RESTART_ALWAYS}\n  at stdin:3 (document 1): # Source: denied-hook/templates/wait-pod.yaml\n`,
    );
  });

  it('says so when hookguard is not on PATH, and finds it through HOOKGUARD_BIN', () => {
    const helmOnly = join(root, 'helm-only');
    mkdirSync(helmOnly, { recursive: true });
    if (!existsSync(join(helmOnly, 'helm'))) symlinkSync(tools!.helm, join(helmOnly, 'helm'));
    const path = `${helmOnly}:/usr/bin:/bin`;
    const missing = runPluginCommand('generate', app, { ...told, PATH: path });
    expect([missing.status, missing.stdout, missing.stderr]).toEqual([127, '', `hookguard-helm: ${NOT_ON_PATH}\n`]);
    const viaBin = runPluginCommand('generate', app, { ...told, PATH: path, HOOKGUARD_BIN: join(bin, 'hookguard') });
    expect(viaBin.status, describeRun(viaBin)).toBe(0);
    expect(viaBin.stdout).toBe(generated.stdout);
  });

  it('fails, printing no manifests, when helm template fails (pipefail)', () => {
    const run = runPluginCommand('generate', app, { ...told, ARGOCD_ENV_HELM_ARGS: '--kube-version nonsense' });
    expect(run.status).toBe(1);
    expect(run.stdout).toBe('');
    // hookguard, reading nothing, says so after helm's error.
    expect(run.stderr).toBe(
      `Error: invalid kube version 'nonsense': could not parse "nonsense" as version\nhookguard check: no Kubernetes object found in standard input\n`,
    );
  });
});
