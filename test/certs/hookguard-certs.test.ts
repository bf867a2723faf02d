// certs/hookguard-certs.sh run for real (bash, openssl) in a temp folder; the caBundle patch applied by a real
// `kubectl patch --local` to the rendered webhook configurations; the certificate served by hookguard over real
// TLS and verified the way the API server verifies it (the caBundle as CA, the Service's DNS name).
import { execFile, spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { chmodSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from 'node:tls';
import { once } from 'node:events';
import { promisify } from 'node:util';
import { pino } from 'pino';
import { parse, stringify } from 'yaml';
import { afterAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { buildApp } from '../../src/http/app.js';
import { assertValidKubeObject } from '../support/k8s-schema.js';
import { helmAndKubectl, repoRoot } from '../support/k8s-tools.js';
import { find, render, renderChart, runHealthCheck, type Manifest } from '../support/manifests.js';

const execFileAsync = promisify(execFile);
const script = join(repoRoot, 'certs', 'hookguard-certs.sh');
const root = mkdtempSync(join(tmpdir(), 'hookguard-certs-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function runScript(args: string[], cwd = root) {
  const result = spawnSync('bash', [script, ...args], {
    cwd,
    encoding: 'utf8',
    env: { PATH: process.env.PATH ?? '' },
    timeout: 30_000,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

function freshDir(name: string): string {
  return mkdtempSync(join(root, `${name}-`));
}

const read = (dir: string, file: string) => readFileSync(join(dir, file), 'utf8');
const pems = (text: string) => text.match(/-----BEGIN CERTIFICATE-----[^-]+-----END CERTIFICATE-----\n/g) ?? [];
const openssl = (...args: string[]) => spawnSync('openssl', args, { encoding: 'utf8' });

describe('certs/hookguard-certs.sh', () => {
  it('makes a CA and a serving certificate for the Service names, that openssl verifies, and says what to do next', () => {
    const out = freshDir('first');
    const run = runScript(['--namespace', 'demo', '--out', out]);
    expect(run.status, run.stderr).toBe(0);
    expect(run.stdout).toContain(
      `hookguard-certs: wrote a CA and a certificate for hookguard.demo.svc and hookguard.demo.svc.cluster.local to ${out}`,
    );
    expect(run.stdout).toContain(
      `kubectl patch mutatingwebhookconfiguration hookguard --type json --patch-file ${out}/cabundle-patch.json`,
    );

    const verify = openssl('verify', '-CAfile', join(out, 'ca.crt'), join(out, 'tls.crt'));
    expect([verify.status, verify.stdout.trim()]).toEqual([0, `${join(out, 'tls.crt')}: OK`]);
    const text = openssl(
      'x509',
      '-in',
      join(out, 'tls.crt'),
      '-noout',
      '-ext',
      'subjectAltName,keyUsage,extendedKeyUsage,basicConstraints',
    ).stdout;
    expect(text.replace(/\s+/g, ' ').trim()).toBe(
      'X509v3 Basic Constraints: critical CA:FALSE X509v3 Key Usage: critical Digital Signature, Key Encipherment ' +
        'X509v3 Extended Key Usage: TLS Web Server Authentication ' +
        'X509v3 Subject Alternative Name: DNS:hookguard.demo.svc, DNS:hookguard.demo.svc.cluster.local',
    );
    const ca = new X509Certificate(read(out, 'ca.crt'));
    const serving = new X509Certificate(read(out, 'tls.crt'));
    expect([ca.ca, serving.ca, serving.checkIssued(ca), serving.verify(ca.publicKey)]).toEqual([
      true,
      false,
      true,
      true,
    ]);
    expect(serving.checkHost('hookguard.other.svc')).toBeUndefined();
    // Private keys are readable by their owner only; the CA's key, never reused, is not kept at all.
    for (const file of ['tls.key', 'secret.yaml'])
      expect(spawnSync('stat', ['-c', '%a', join(out, file)], { encoding: 'utf8' }).stdout.trim()).toBe('600');
    expect(readdirSync(out).sort()).toEqual([
      'ca.crt',
      'cabundle-patch.json',
      'cabundle.pem',
      'secret.yaml',
      'tls.crt',
      'tls.key',
    ]);
  });

  it('writes the Secret hookguard-tls the Deployment mounts, schema-valid, holding exactly the files it wrote', () => {
    const out = freshDir('secret');
    expect(runScript(['--namespace', 'demo', '--out', out]).status).toBe(0);
    const secret = parse(read(out, 'secret.yaml')) as Manifest;
    assertValidKubeObject(secret);
    expect([secret.metadata.name, secret.metadata.namespace, secret.type]).toEqual([
      'hookguard-tls',
      'demo',
      'kubernetes.io/tls',
    ]);
    const decoded = Object.fromEntries(
      Object.entries(secret.data as Record<string, string>).map(([key, value]) => [
        key,
        Buffer.from(value, 'base64').toString('utf8'),
      ]),
    );
    expect(decoded).toEqual({
      'tls.crt': read(out, 'tls.crt'),
      'tls.key': read(out, 'tls.key'),
      'ca.crt': read(out, 'ca.crt'),
    });
  });

  it('rotates on every run, keeping the previous CA in the caBundle for one rotation', () => {
    const out = freshDir('rotate');
    const cas: string[] = [];
    const servings: string[] = [];
    for (let round = 0; round < 3; round++) {
      expect(runScript(['--namespace', 'demo', '--out', out]).status).toBe(0);
      cas.push(read(out, 'ca.crt'));
      servings.push(read(out, 'tls.crt'));
      const bundle = pems(read(out, 'cabundle.pem'));
      expect(bundle).toEqual(round === 0 ? [cas[0]] : [cas[round], cas[round - 1]]);
      const patch = JSON.parse(read(out, 'cabundle-patch.json'));
      expect(patch).toEqual([
        {
          op: 'add',
          path: '/webhooks/0/clientConfig/caBundle',
          value: Buffer.from(read(out, 'cabundle.pem')).toString('base64'),
        },
      ]);
    }
    expect(new Set(cas).size).toBe(3);
    expect(new Set(servings).size).toBe(3);
  });

  it('produces a caBundle patch that a real kubectl applies to both shipped webhook configurations, which Argo CD then calls Healthy', async () => {
    const out = freshDir('patch');
    expect(runScript(['--out', out]).status).toBe(0);
    const { kubectl } = await helmAndKubectl();
    // The chart's webhooks where the certificate comes from a Secret the script made (certificates.mode secret).
    const objects = await renderChart({ values: { certificates: { mode: 'secret' } } });
    const patchedOnes: Manifest[] = [];
    for (const kind of ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration']) {
      const file = join(out, `${kind}.yaml`);
      writeFileSync(file, stringify(find(objects, kind, 'hookguard')));
      const { stdout } = await execFileAsync(kubectl, [
        'patch',
        '-f',
        file,
        '--local',
        '--type',
        'json',
        '--patch-file',
        join(out, 'cabundle-patch.json'),
        '-o',
        'yaml',
      ]);
      const patched = parse(stdout) as Manifest;
      expect(Buffer.from(patched.webhooks[0].clientConfig.caBundle, 'base64').toString('utf8')).toBe(
        read(out, 'cabundle.pem'),
      );
      patchedOnes.push(patched);
    }
    const [health] = await render('argocd');
    for (const patched of patchedOnes) {
      const check = health?.data[
        `resource.customizations.health.admissionregistration.k8s.io_${patched.kind}`
      ] as string;
      expect((await runHealthCheck(check, patched)).status).toBe('Healthy');
    }
  });

  it('with --apply, patches both caBundles before it applies the Secret (kubectl stand-in that records its calls)', () => {
    const out = freshDir('apply');
    const log = join(out, 'kubectl.log');
    const fake = join(out, 'fake-kubectl');
    writeFileSync(fake, `#!/usr/bin/env bash\nprintf '%s\\n' "$*" >> '${log}'\n`);
    chmodSync(fake, 0o755);
    const run = runScript(['--out', out, '--apply', '--kubectl', fake]);
    expect(run.status, run.stderr).toBe(0);
    expect(read(out, 'kubectl.log').split('\n').filter(Boolean)).toEqual([
      `patch mutatingwebhookconfiguration hookguard --type json --patch-file ${out}/cabundle-patch.json`,
      `patch validatingwebhookconfiguration hookguard --type json --patch-file ${out}/cabundle-patch.json`,
      // Server-side: a client-side apply copies the private key into last-applied-configuration.
      `apply --server-side --field-manager=hookguard-certs --force-conflicts -f ${out}/secret.yaml`,
    ]);
    expect(run.stdout).toContain('hookguard-certs: caBundle injected and Secret hookguard/hookguard-tls applied');
  });

  it('removes a CA key an earlier version left in --out', () => {
    const out = freshDir('leftover');
    writeFileSync(join(out, 'ca.key'), 'an old CA key\n');
    expect(runScript(['--out', out]).status).toBe(0);
    expect(readdirSync(out)).not.toContain('ca.key');
  });

  it('stops at the first kubectl failure, with its exit status', () => {
    const out = freshDir('fail');
    const fake = join(out, 'failing-kubectl');
    writeFileSync(
      fake,
      '#!/usr/bin/env bash\necho "error: mutatingwebhookconfigurations.admissionregistration.k8s.io \\"hookguard\\" not found" >&2\nexit 1\n',
    );
    chmodSync(fake, 0o755);
    const run = runScript(['--out', out, '--apply', '--kubectl', fake]);
    expect(run.status).toBe(1);
    expect(run.stderr).toContain('"hookguard" not found');
    expect(run.stdout).not.toContain('caBundle injected');
  });

  it.each([
    [['--namespace', 'Bad_Name'], 'hookguard-certs: "Bad_Name" is not a valid Kubernetes name (DNS label)'],
    [['--days', '0'], 'hookguard-certs: --days must be a positive integer, got "0"'],
    [['--frobnicate'], 'hookguard-certs: unknown argument: --frobnicate'],
  ])('refuses %j with exit 2 and says why, writing nothing', (args, message) => {
    const out = join(freshDir('bad'), 'out');
    const run = runScript([...args, '--out', out]);
    expect([run.status, run.stderr.split('\n')[0]]).toEqual([2, message]);
    expect(spawnSync('test', ['-e', out]).status).toBe(1);
  });

  it('serves: hookguard with these files is verified by a client that trusts only the caBundle and asks for the Service name', async () => {
    const out = freshDir('serve');
    expect(runScript(['--namespace', 'demo', '--out', out]).status).toBe(0);
    const app = buildApp(loadConfig(), {
      logger: pino({ level: 'silent' }),
      tls: { key: read(out, 'tls.key'), cert: read(out, 'tls.crt') },
    });
    await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      const port = (app.server.address() as AddressInfo).port;
      for (const servername of ['hookguard.demo.svc', 'hookguard.demo.svc.cluster.local']) {
        const socket = connect({ host: '127.0.0.1', port, servername, ca: read(out, 'cabundle.pem') });
        await once(socket, 'secureConnect');
        expect(socket.authorized).toBe(true);
        socket.destroy();
      }
      const wrongName = connect({
        host: '127.0.0.1',
        port,
        servername: 'hookguard.other.svc',
        ca: read(out, 'cabundle.pem'),
      });
      const [error] = (await once(wrongName, 'error')) as [NodeJS.ErrnoException];
      expect(error.code).toBe('ERR_TLS_CERT_ALTNAME_INVALID');
    } finally {
      await app.close();
    }
  });
});
