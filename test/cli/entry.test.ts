// The CLI's entry as a newcomer meets it (issue 42.16): on a Node.js older than package.json's engines, and through
// `npm run hookguard` before anything was built. Real processes, each read as the user reads it.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, dirname, join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { cliPath } from '../support/cli.js';
import { repoRoot } from '../support/k8s-tools.js';

const { version, engines } = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as {
  version: string;
  engines: { node: string };
};

/** `node dist/cli/main.js --version` on a Node.js that says it is `node`: process.versions.node set before the entry. */
function versionOn(node: string) {
  const preload = `data:text/javascript,Object.defineProperty(process.versions,"node",{value:"${node}"})`;
  return spawnSync(process.execPath, ['--import', preload, cliPath, '--version'], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '' },
  });
}

describe('a Node.js older than engines', () => {
  it.each(['22.12.0', '20.20.2', '18.20.8'])(
    'Node.js %s: one line saying what it needs, exit 2, nothing run',
    (node) => {
      const run = versionOn(node);
      expect([run.status, run.stdout, run.stderr]).toEqual([
        2,
        '',
        `hookguard: this is Node.js ${node}, and hookguard needs Node.js ${engines.node} (package.json engines): run it with a newer Node.js\n`,
      ]);
    },
  );

  it.each(['22.13.0', '24.19.0'])('Node.js %s runs it', (node) => {
    const run = versionOn(node);
    expect([run.status, run.stdout, run.stderr]).toEqual([0, `${version}\n`, '']);
  });
});

// In a copy of the package without dist/, so that its build does not rewrite the dist/ other tests are running.
describe('npm run hookguard before a build', () => {
  const copy = mkdtempSync(join(tmpdir(), 'hookguard-npm-run-'));
  afterAll(() => rmSync(copy, { recursive: true, force: true }));

  it('says so in one line, builds first, then runs the command', () => {
    for (const path of ['package.json', 'tsconfig.json', 'tsconfig.build.json', 'src', 'data', 'scripts'])
      cpSync(join(repoRoot, path), join(copy, path), { recursive: true });
    symlinkSync(join(repoRoot, 'node_modules'), join(copy, 'node_modules'));
    const run = spawnSync('npm', ['run', 'hookguard', '--silent', '--', '--version'], {
      cwd: copy,
      encoding: 'utf8',
      // npm and the node it starts: the Node.js running this test.
      env: { PATH: `${dirname(process.execPath)}${delimiter}${process.env.PATH ?? ''}`, HOME: copy },
      timeout: 180_000,
    });
    expect([run.status, run.stdout, run.stderr]).toEqual([
      0,
      `${version}\n`,
      'hookguard: not built yet (no dist/cli/main.js): building it first with npm run build\n',
    ]);
    expect(existsSync(join(copy, 'dist', 'cli', 'main.js'))).toBe(true);
  }, 240_000);
});
