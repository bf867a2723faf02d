// `hookguard serve` in a real process, stopped at start by a bad config, unusable certificate files or a taken port:
// exit status 2, one line on stderr naming the key, nothing on stdout. (test/unit/config.test.ts tests the loader.)
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { freePort } from '../support/serve-process.js';
import { runCli } from '../support/cli.js';

const dir = mkdtempSync(join(tmpdir(), 'hookguard-serve-config-'));
let written = 0;

afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** Writes a file (a YAML config, or what should be a certificate) and returns its path. */
function yamlFile(text: string): string {
  const path = join(dir, `file-${++written}.yaml`);
  writeFileSync(path, text);
  return path;
}

describe('hookguard serve with a bad config (the built CLI)', () => {
  it.each<[string, () => { args: string[]; env?: Record<string, string> }, string]>([
    [
      'a config file with a misspelt key',
      () => ({ args: ['--config', yamlFile('rules:\n  minRuntime:\n    imag: busybox\n')] }),
      'hookguard serve: invalid config: rules.minRuntime.imag: unknown key\n',
    ],
    [
      'HOOKGUARD_CONFIG naming a file with a bad mode',
      () => ({ args: [], env: { HOOKGUARD_CONFIG: yamlFile('mode: block\n') } }),
      'hookguard serve: invalid config: mode: must be one of enforce, audit, got "block"\n',
    ],
    [
      'HOOKGUARD_PORT=abc',
      () => ({ args: [], env: { HOOKGUARD_PORT: 'abc' } }),
      'hookguard serve: invalid config: server.port: must be a number, got string "abc"\n',
    ],
  ])('exits 2 naming the bad key: %s', (_name, input, stderr) => {
    const { args, env } = input();
    const run = runCli(['serve', ...args], undefined, env);
    expect(run.status).toBe(2);
    expect(run.stderr).toBe(stderr);
    expect(run.stdout).toBe('');
  });
});

describe('hookguard serve with a bad flag value (the built CLI)', () => {
  it.each([
    [
      ['--argocd-version', 'latest'],
      'hookguard serve: --argocd-version: "latest" is not a semantic version like 2.14.3\n',
    ],
    [['--port', '99999'], 'hookguard serve: --port: must be an integer 1..65535, got 99999\n'],
    [['--mode', 'block'], 'hookguard serve: --mode: must be one of enforce, audit, got "block"\n'],
  ])('exits 2 naming the flag as typed, not the config key: %j', (args, stderr) => {
    // The same value in the environment is the config's, and named by its key.
    const run = runCli(['serve', ...args], undefined, { HOOKGUARD_ARGOCD_VERSION: '3.1.0' });
    expect([run.status, run.stderr, run.stdout]).toEqual([2, stderr, '']);
  });
});

describe('hookguard sweep with a bad flag value (the built CLI)', () => {
  it.each([
    [['--min-age-seconds', 'abc'], 'hookguard sweep: --min-age-seconds: must be a number, got string "abc"\n'],
    [['--profile', 'nope'], 'hookguard sweep: --profile: must hold only argocd-hook, argo-workflows, got "nope"\n'],
  ])('exits 2 naming the flag, before it looks for a cluster: %j', (args, stderr) => {
    const run = runCli(['sweep', ...args]);
    expect([run.status, run.stderr, run.stdout]).toEqual([2, stderr, '']);
  });
});

describe('hookguard serve with unusable TLS files or port (the built CLI)', () => {
  it('exits 2 naming server.tls.certFile when the certificate file is missing', () => {
    const run = runCli(['serve'], undefined, {
      HOOKGUARD_TLS_CERT_FILE: '/nope/tls.crt',
      HOOKGUARD_TLS_KEY_FILE: '/nope/tls.key',
    });
    expect(run.status).toBe(2);
    expect(run.stderr).toBe(
      "hookguard serve: invalid config: server.tls.certFile: cannot read /nope/tls.crt: ENOENT: no such file or directory, open '/nope/tls.crt'\n",
    );
  });

  it('exits 2 naming server.tls when the files hold no usable certificate and key', () => {
    const cert = yamlFile('not a certificate\n');
    const key = yamlFile('not a key\n');
    const run = runCli(['serve'], undefined, { HOOKGUARD_TLS_CERT_FILE: cert, HOOKGUARD_TLS_KEY_FILE: key });
    expect(run.status).toBe(2);
    expect(run.stderr).toMatch(
      /^hookguard serve: invalid config: server\.tls: .* are not a usable certificate and key: /,
    );
  });

  it('exits 2 saying plainly that the port is taken, and how to choose another', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as AddressInfo;
    try {
      const run = runCli(['serve', '--host', '127.0.0.1', '--port', String(port)]);
      expect(run.status).toBe(2);
      expect(run.stderr).toBe(
        `hookguard serve: port ${port} is already in use (on 127.0.0.1:${port}): stop what listens there, or choose another port with --port, HOOKGUARD_PORT or server.port\n`,
      );
    } finally {
      taken.close();
    }
  });

  it('exits 2 naming server.probePort when the probe port is taken', async () => {
    const taken = createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as AddressInfo;
    try {
      const run = runCli(['serve', '--host', '127.0.0.1', '--port', String(await freePort())], undefined, {
        HOOKGUARD_PROBE_PORT: String(port),
      });
      expect(run.status).toBe(2);
      expect(run.stderr).toMatch(
        new RegExp(
          `^hookguard serve: port ${port} is already in use \\(on 127\\.0\\.0\\.1:${port}\\): stop what listens there, or choose another probe port with HOOKGUARD_PROBE_PORT or server\\.probePort\n$`,
        ),
      );
    } finally {
      taken.close();
    }
  });
});
