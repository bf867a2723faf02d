// `npm start` is how the README starts the server: stopped with SIGTERM (a terminal's kill, a process supervisor, a
// container runtime running npm), the server must stop too, not live on as an orphan still holding the port. npm
// forwards the signal to the script's shell, so the script must exec the server, leaving no shell between them.
// Run in a copy of the package, so that its build does not rewrite the dist/ other tests are running.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { cpSync, existsSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, describe, expect, it } from 'vitest';
import { repoRoot } from '../support/k8s-tools.js';
import { freePort } from '../support/serve-process.js';

const copy = mkdtempSync(join(tmpdir(), 'hookguard-npm-start-'));
afterAll(() => rmSync(copy, { recursive: true, force: true }));

/** Every process below `pid`, from /proc (Linux). */
function descendants(pid: number): number[] {
  let children: string;
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8');
  } catch {
    return [];
  }
  return children
    .trim()
    .split(/\s+/)
    .filter(Boolean)
    .map(Number)
    .flatMap((child) => [child, ...descendants(child)]);
}

function commandLine(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').replaceAll('\0', ' ');
  } catch {
    return '';
  }
}

describe.skipIf(!existsSync('/proc/self/task'))('npm start', () => {
  it('stopped with SIGTERM, stops the server too', async () => {
    for (const path of ['package.json', 'tsconfig.json', 'tsconfig.build.json', 'src', 'data'])
      cpSync(join(repoRoot, path), join(copy, path), { recursive: true });
    symlinkSync(join(repoRoot, 'node_modules'), join(copy, 'node_modules'));
    const config = join(copy, 'config.yaml');
    writeFileSync(config, 'server:\n  shutdownDelayMs: 0\n');

    const port = await freePort();
    const npm = spawn('npm', ['start', '--silent'], {
      cwd: copy,
      env: {
        PATH: process.env.PATH ?? '',
        HOME: copy,
        HOOKGUARD_CONFIG: config,
        HOOKGUARD_HOST: '127.0.0.1',
        HOOKGUARD_PORT: String(port),
        HOOKGUARD_DISCOVERY_ENABLED: 'false',
        HOOKGUARD_SELF_TEST_ENABLED: 'false',
      },
    });
    let log = '';
    npm.stdout.on('data', (chunk: Buffer) => (log += chunk.toString('utf8')));
    const exited = once(npm, 'exit');
    let server: number | undefined;
    try {
      for (let waited = 0; !log.includes('"msg":"hookguard ready"'); waited += 100) {
        if (waited > 90_000 || npm.exitCode !== null) throw new Error(`npm start did not get ready:\n${log}`);
        await sleep(100);
      }
      const servers = descendants(npm.pid!).filter((pid) => commandLine(pid).includes('dist/cli/main.js serve'));
      expect(servers).toHaveLength(1);
      server = servers[0]!;

      npm.kill('SIGTERM');
      await exited;
      for (let waited = 0; existsSync(`/proc/${server}`) && waited < 10_000; waited += 100) await sleep(100);
      expect(existsSync(`/proc/${server}`), `the server (pid ${server}) outlived npm:\n${log}`).toBe(false);
      expect(log).toContain('"signal":"SIGTERM"');
    } finally {
      // Only what this test started: npm, and the server it started, should either outlive the test.
      for (const pid of [npm.pid!, ...(server === undefined ? [] : [server])])
        if (existsSync(`/proc/${pid}`)) process.kill(pid, 'SIGKILL');
    }
  }, 120_000);
});
