// The README's manual fix for a stuck hook finalizer, run as written in a real bash. kubectl there is a stand-in
// that hands each call to the real kubectl in offline mode (`patch --local` on a Job file: the same go-template
// and JSON-patch code a cluster call would run client- and server-side), since no API server runs here.
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { stringify } from 'yaml';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { HOOK_FINALIZER, hookJob } from '../support/objects.js';
import { helmAndKubectl, repoRoot } from '../support/k8s-tools.js';

const dir = mkdtempSync(join(tmpdir(), 'hookguard-finalizer-fix-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** The shell lines of the README block that follows "Removing a stuck hook finalizer by hand". */
function readmeFix(): string {
  const readme = readFileSync(join(repoRoot, 'README.md'), 'utf8');
  const section = readme.slice(readme.indexOf('**Removing a stuck hook finalizer by hand.**'));
  const block = /```sh\n([\s\S]*?)```/.exec(section);
  if (!block?.[1]) throw new Error('README: no sh block after "Removing a stuck hook finalizer by hand"');
  return block[1];
}

// `get job NAME -n NS -o go-template=T` reads $GET_FILE; `patch job NAME -n NS --type json -p=P` patches $PATCH_FILE
// and writes the result to $RESULT_FILE. Two files, so a test can change the Job between the two calls.
const FAKE_KUBECTL = `#!/usr/bin/env bash
set -euo pipefail
verb=$1
shift 5
if [[ $verb == get ]]; then
  exec "$REAL_KUBECTL" patch -f "$GET_FILE" --local --type merge -p '{}' "$@"
fi
"$REAL_KUBECTL" patch -f "$PATCH_FILE" --local "$@" -o json > "$RESULT_FILE"
`;

let realKubectl: string;
beforeAll(async () => {
  realKubectl = (await helmAndKubectl()).kubectl;
  writeFileSync(join(dir, 'kubectl'), FAKE_KUBECTL);
  chmodSync(join(dir, 'kubectl'), 0o755);
});

function jobWith(name: string, finalizers: string[]): string {
  const job = hookJob({ 'argocd.argoproj.io/hook': 'PreSync' });
  (job.metadata as Record<string, unknown>).finalizers = finalizers;
  const file = join(dir, `${name}.yaml`);
  writeFileSync(file, stringify(job));
  return file;
}

function runFix(getFile: string, patchFile: string) {
  const result = join(dir, 'result.json');
  rmSync(result, { force: true });
  const run = spawnSync('bash', ['-e', '-c', readmeFix()], {
    encoding: 'utf8',
    // Not a socket on stdin (Node's default), with which bash -c takes itself for a remote shell and reads ~/.bashrc.
    stdio: ['ignore', 'pipe', 'pipe'],
    env: {
      PATH: `${dir}:${process.env.PATH ?? ''}`,
      REAL_KUBECTL: realKubectl,
      GET_FILE: getFile,
      PATCH_FILE: patchFile,
      RESULT_FILE: result,
    },
  });
  let finalizers: unknown;
  try {
    finalizers = (JSON.parse(readFileSync(result, 'utf8')) as { metadata: { finalizers?: string[] } }).metadata
      .finalizers;
  } catch {
    finalizers = undefined;
  }
  return { status: run.status, stderr: run.stderr, finalizers };
}

describe('README: removing a stuck hook finalizer by hand', () => {
  it('removes only the hook finalizer and keeps the others in order', () => {
    const job = jobWith('stuck', ['example.com/keep', HOOK_FINALIZER, 'other.io/too']);
    const fix = runFix(job, job);
    expect([fix.status, fix.finalizers], fix.stderr).toEqual([0, ['example.com/keep', 'other.io/too']]);
  });

  it('removes it when it is the only one', () => {
    const job = jobWith('only', [HOOK_FINALIZER]);
    expect(runFix(job, job)).toMatchObject({ status: 0, finalizers: [] });
  });

  it('fails, removing nothing, when the list changed between the two commands', () => {
    const seen = jobWith('seen', ['example.com/keep', HOOK_FINALIZER]);
    const changed = jobWith('changed', [HOOK_FINALIZER, 'example.com/keep']);
    const fix = runFix(seen, changed);
    expect(fix.status).not.toBe(0);
    expect(fix.stderr).toContain('test failed');
    expect(fix.finalizers).toBeUndefined();
  });

  it('fails, removing nothing, when there is no hook finalizer', () => {
    const job = jobWith('none', ['example.com/keep']);
    const fix = runFix(job, job);
    expect(fix.status).not.toBe(0);
    expect(fix.finalizers).toBeUndefined();
  });
});
