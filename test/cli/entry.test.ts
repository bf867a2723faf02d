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

/** `node dist/cli/main.js ARGS` on a Node.js that says it is `node`: process.versions.node set before the entry. */
function runOn(node: string, args: readonly string[]) {
  const preload = `data:text/javascript,Object.defineProperty(process.versions,"node",{value:"${node}"})`;
  return spawnSync(process.execPath, ['--import', preload, cliPath, ...args], {
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '' },
  });
}

describe('a Node.js older than engines', () => {
  it.each(['22.12.0', '20.20.2', '18.20.8'])(
    'Node.js %s: serve says in one line what hookguard is built for, then goes on',
    (node) => {
      const run = runOn(node, ['serve', '--no-such-option']);
      expect([run.status, run.stdout, run.stderr]).toEqual([
        2,
        '',
        `hookguard: this is Node.js ${node}, and hookguard is built and tested for Node.js ${engines.node} (package.json engines): run it with a newer one if anything fails\n` +
          'hookguard serve: unknown option --no-such-option (--help lists the options)\n',
      ]);
    },
  );

  it('Node.js 20.20.2: the other commands print only their own output', () => {
    const run = runOn('20.20.2', ['--version']);
    expect([run.status, run.stdout, run.stderr]).toEqual([0, `${version}\n`, '']);
  });

  it.each(['22.13.0', '24.19.0'])('Node.js %s: serve says nothing of it', (node) => {
    const run = runOn(node, ['serve', '--no-such-option']);
    expect([run.status, run.stderr]).toEqual([
      2,
      'hookguard serve: unknown option --no-such-option (--help lists the options)\n',
    ]);
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
