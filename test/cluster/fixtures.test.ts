// Every hook fixture of the repository (real charts' hooks), created through the real API server with hookguard's
// webhooks in front of it, as the chart registers them: admitted or denied exactly as `hookguard check` says with the
// same configuration, and stored with each change check makes at admission (nothing dropped, nothing refused as
// invalid); the manifest `check --fix` prints goes through as well, and a server-side dry run stores nothing.
import { applyPatch, type Operation } from 'fast-json-patch';
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { generate } from 'selfsigned';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { fixtureFiles, fixturePath, fixtureText } from '../support/fixtures.js';
import { cliPath } from '../support/cli.js';
import { runCommand } from '../support/command.js';
import { freePort } from '../support/serve-process.js';
import {
  AUDIT_NAMESPACE_LABEL,
  clusterDir,
  deleteNamespace,
  describeCluster,
  kubectl,
  newNamespace,
  run,
  waitUntil,
} from './support/cluster.js';
import { join } from 'node:path';

type Json = Record<string, unknown>;

const config = join(clusterDir, 'hookguard', 'config.yaml');
/** Namespaces with this label are left to the audit-mode hookguard below (test/cluster/cluster.js renders the chart so). */

/** The annotations only the tools read from a rendered manifest: check --fix writes them, admission never does. */
const RENDER_ONLY_ANNOTATIONS = [
  '/metadata/annotations/helm.sh~1hook-delete-policy',
  '/metadata/annotations/argocd.argoproj.io~1hook-delete-policy',
  '/metadata/annotations/helm.sh~1hook-output-log-policy',
];

/**
 * actual holds everything expected says: the same keys with the same values, arrays item by item. An empty list or
 * map may be absent from actual: the API server drops them from fields marked `omitempty` (`annotations: {}`,
 * `tolerations: []`).
 */
function missingFrom(actual: unknown, expected: unknown, path = ''): string[] {
  if (actual === undefined && isEmptyCollection(expected)) return [];
  if (Array.isArray(expected)) {
    if (!Array.isArray(actual) || actual.length !== expected.length)
      return [`${path}: ${JSON.stringify(actual)} is not ${JSON.stringify(expected)}`];
    return expected.flatMap((item, i) => missingFrom(actual[i], item, `${path}/${i}`));
  }
  if (expected !== null && typeof expected === 'object') {
    if (actual === null || typeof actual !== 'object') return [`${path}: ${JSON.stringify(actual)} is not an object`];
    return Object.entries(expected).flatMap(([key, value]) =>
      value === null ? [] : missingFrom((actual as Json)[key], value, `${path}/${key}`),
    );
  }
  return actual === expected ? [] : [`${path}: ${JSON.stringify(actual)} is not ${JSON.stringify(expected)}`];
}

function isEmptyCollection(value: unknown): boolean {
  if (Array.isArray(value)) return value.length === 0;
  return value !== null && typeof value === 'object' && Object.keys(value).length === 0;
}

interface Checked {
  status: number | null;
  patch: Operation[];
  denial: string;
  fixed: string;
}

const checks = new Map<string, Promise<Checked>>();

/**
 * `hookguard check -o json` and `check --fix` of a fixture with the cluster's configuration, once for both groups
 * below. They run in this process (test/support/command.ts: the same command, arguments and output, without a
 * Node.js start of about a second each, 88 of them); the built CLI as a process is test/e2e's.
 */
function check(file: string): Promise<Checked> {
  let checked = checks.get(file);
  if (checked === undefined) {
    checked = (async () => {
      const json = await runCommand(['check', '-o', 'json', '--config', config, fixturePath(file)]);
      const fix = await runCommand(['check', '--fix', '--config', config, fixturePath(file)]);
      const result = (JSON.parse(json.stdout) as { results: Array<{ patch?: Operation[] }> }).results[0];
      return { status: json.status, patch: result?.patch ?? [], denial: fix.stderr, fixed: fix.stdout };
    })();
    checks.set(file, checked);
  }
  return checked;
}

/**
 * The manifest's object as the real kubectl reads it (YAML 1.1: `defaultMode: 0777` is 511), without its namespace,
 * and the ServiceAccount its Pods run as.
 */
async function objectIn(text: string): Promise<{ object: Json; serviceAccount: string | undefined }> {
  const object = JSON.parse(await kubectl(['create', '--dry-run=client', '-o', 'json', '-f', '-'], text)) as Json;
  delete (object.metadata as Json).namespace;
  const spec = object.kind === 'Job' ? ((object.spec as Json).template as Json).spec : object.spec;
  return { object, serviceAccount: (spec as Json).serviceAccountName as string | undefined };
}

describeCluster('every hook fixture through the real API server and hookguard (enforce)', () => {
  const namespaces: string[] = [];
  afterAll(async () => {
    for (const name of namespaces) await deleteNamespace(name);
  });

  it.concurrent.each(fixtureFiles())('%s', async (file) => {
    const ns = await newNamespace('fixture');
    namespaces.push(ns);
    const checked = await check(file);
    const { object, serviceAccount } = await objectIn(fixtureText(file));
    if (serviceAccount) await kubectl(['create', 'serviceaccount', serviceAccount, '-n', ns]);

    const created = await run(join(clusterDir, 'bin', 'kubectl'), ['create', '-n', ns, '-o', 'json', '-f', '-'], {
      input: JSON.stringify(object),
    });
    if (checked.status === 1) {
      expect(created.status, `check denies ${file}, the API server stored it`).not.toBe(0);
      expect(created.stderr).toContain('admission webhook "validate.hookguard.io" denied the request');
      // The reason the API server gives is the one check printed.
      const reason = /denied .*?: (.*)$/m.exec(checked.denial)?.[1] ?? checked.denial.trim();
      expect(created.stderr).toContain(reason.slice(0, 60));
      return;
    }
    expect(checked.status, checked.denial).toBe(0);
    expect(created.status, created.stderr).toBe(0);
    const stored = JSON.parse(created.stdout) as Json;

    const atAdmission = checked.patch.filter((op) => !RENDER_ONLY_ANNOTATIONS.includes(op.path));
    const expected = applyPatch(structuredClone(object), atAdmission, true, false).newDocument;
    delete (expected.metadata as Json).name;
    expect(missingFrom(stored, expected)).toEqual([]);

    // The manifest check --fix prints (as the post-renderer hands it to Helm): admitted, and stored with every
    // change, render-time ones included; a server-side dry run stores nothing.
    const fixed = (await objectIn(checked.fixed)).object;
    if ((fixed.metadata as Json).name) (fixed.metadata as Json).name = `${String((fixed.metadata as Json).name)}-fixed`;
    const dryRun = await run(
      join(clusterDir, 'bin', 'kubectl'),
      ['create', '--dry-run=server', '-n', ns, '-o', 'json', '-f', '-'],
      { input: JSON.stringify(fixed) },
    );
    expect(dryRun.status, dryRun.stderr).toBe(0);
    const dryStored = JSON.parse(dryRun.stdout) as Json;
    const fixedExpected = structuredClone(fixed);
    delete (fixedExpected.metadata as Json).name;
    expect(missingFrom(dryStored, fixedExpected)).toEqual([]);
    const kind = String(object.kind).toLowerCase();
    const name = String((dryStored.metadata as Json).name);
    const after = await run(join(clusterDir, 'bin', 'kubectl'), ['get', kind, name, '-n', ns]);
    expect(after.stderr).toContain('NotFound');
  });
});

describeCluster('every hook fixture through a hookguard in audit mode', () => {
  const namespaces: string[] = [];
  let server: ChildProcess | undefined;
  let workDir = '';

  beforeAll(async () => {
    workDir = await mkdtemp(join(tmpdir(), 'hookguard-audit-'));
    const pems = await generate([{ name: 'commonName', value: '127.0.0.1' }], {
      keySize: 2048,
      extensions: [{ name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] }],
    });
    await writeFile(join(workDir, 'tls.crt'), pems.cert);
    await writeFile(join(workDir, 'tls.key'), pems.private);
    const [port, probePort] = [await freePort(), await freePort()];
    // Its own Lease and no controllers: the enforce-mode hookguard of the cluster keeps leading.
    await writeFile(
      join(workDir, 'config.yaml'),
      stringify({
        mode: 'audit',
        server: {
          host: '127.0.0.1',
          port,
          probePort,
          tls: { certFile: join(workDir, 'tls.crt'), keyFile: join(workDir, 'tls.key') },
        },
        leaderElection: { leaseName: 'hookguard-audit', leaseNamespace: 'hookguard' },
        selfTest: { enabled: false },
        hookWatch: { enabled: false },
        discovery: { enabled: false },
      }),
    );
    server = spawn(process.execPath, [cliPath, 'serve'], {
      env: {
        PATH: process.env.PATH ?? '',
        KUBECONFIG: join(clusterDir, 'hookguard', 'kubeconfig'),
        HOOKGUARD_CONFIG: join(workDir, 'config.yaml'),
      },
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    await waitUntil(
      'the audit-mode hookguard to be ready',
      async () => (await fetch(`http://127.0.0.1:${probePort}/readyz`)).status === 200,
    );
    // The chart's own webhooks, as registered, sent to it for the namespaces labelled for audit.
    for (const kind of ['mutatingwebhookconfiguration', 'validatingwebhookconfiguration']) {
      const live = JSON.parse(await kubectl(['get', kind, 'hookguard', '-o', 'json'])) as Json;
      const copy = {
        apiVersion: live.apiVersion,
        kind: live.kind,
        metadata: { name: 'hookguard-audit' },
        webhooks: live.webhooks as Json[],
      };
      for (const webhook of copy.webhooks) {
        const path = String((webhook.clientConfig as { service: Json }).service.path);
        webhook.clientConfig = {
          url: `https://127.0.0.1:${port}${path}`,
          caBundle: Buffer.from(pems.cert).toString('base64'),
        };
        webhook.namespaceSelector = { matchLabels: { [AUDIT_NAMESPACE_LABEL]: 'true' } };
      }
      await kubectl(['apply', '-f', '-'], JSON.stringify(copy));
    }
  });
  afterAll(async () => {
    await run(join(clusterDir, 'bin', 'kubectl'), [
      'delete',
      'mutatingwebhookconfiguration,validatingwebhookconfiguration',
      'hookguard-audit',
      '--ignore-not-found',
    ]);
    server?.kill('SIGTERM');
    for (const name of namespaces) await deleteNamespace(name);
    await rm(workDir, { recursive: true, force: true });
  });

  it.concurrent.each(fixtureFiles())('%s: stored as written, with the warnings', async (file) => {
    const ns = await newNamespace('audit', { [AUDIT_NAMESPACE_LABEL]: 'true' });
    namespaces.push(ns);
    const checked = await check(file);
    const { object, serviceAccount } = await objectIn(fixtureText(file));
    if (serviceAccount) await kubectl(['create', 'serviceaccount', serviceAccount, '-n', ns]);
    const created = await run(join(clusterDir, 'bin', 'kubectl'), ['create', '-n', ns, '-o', 'json', '-f', '-'], {
      input: JSON.stringify(object),
    });
    expect(created.status, created.stderr).toBe(0);
    const stored = JSON.parse(created.stdout) as Json;
    const asWritten = structuredClone(object);
    delete (asWritten.metadata as Json).name;
    expect(missingFrom(stored, asWritten)).toEqual([]);
    const atAdmission = checked.patch.filter((op) => !RENDER_ONLY_ANNOTATIONS.includes(op.path));
    for (const op of atAdmission) {
      if (op.op !== 'add' && op.op !== 'replace') continue;
      expect(valueAt(stored, op.path), `audit mode must not apply ${op.op} ${op.path}`).not.toEqual(op.value);
    }
    if (checked.status === 1 || atAdmission.length > 0) expect(created.stderr).toMatch(/^Warning: /m);
  });
});

function valueAt(document: unknown, pointer: string): unknown {
  return pointer
    .split('/')
    .slice(1)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce<unknown>((at, key) => (at !== null && typeof at === 'object' ? (at as Json)[key] : undefined), document);
}
