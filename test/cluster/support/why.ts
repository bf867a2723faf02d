// What the cluster tests of `hookguard why` share: the built CLI run as a person runs it (text) and as a script does
// (JSON), a hook Job for the kubelet simulator to play, another admission webhook that refuses Pods, and a kubeconfig
// for a ServiceAccount holding only the rights a test names.
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { writeFile } from 'node:fs/promises';
import { generate } from 'selfsigned';
import { cliPath } from '../../support/cli.js';
import { runCommand } from '../../support/command.js';
import { kubeconfig, kubectl, kubectlJson, run } from './cluster.js';
import { serviceAccountToken } from './fault-proxy.js';

export type Json = Record<string, any>;

export interface Why {
  status: number;
  /** stdout of the text output, its moments and ages put as `since TIME (AGE)` (checked to be the JSON's). */
  text: string;
  stderr: string;
  json: Json;
  /** The first hook of the JSON output. */
  hook: Json;
}

const SINCE = / since (\S+) \([0-9dhms]+\)/g;

/**
 * `hookguard why ARGS` twice, side by side: text and `-o json`. The text's moments must be the JSON's `since` (each
 * hook's, each release's), so the rest can be compared exactly.
 */
export async function why(args: readonly string[], env: Record<string, string> = {}): Promise<Why> {
  const base = [cliPath, 'why', ...args];
  const [json, text] = await Promise.all([
    run(process.execPath, [...base, '-o', 'json'], { env }),
    run(process.execPath, base, { env }),
  ]);
  if (json.stdout === '') throw new Error(`why printed nothing (exit ${json.status}): ${json.stderr}`);
  const parsed = JSON.parse(json.stdout) as Json;
  const moments = [...text.stdout.matchAll(SINCE)].map((match) => match[1]);
  const expected = [
    ...((parsed.releases as Json[] | undefined) ?? []).map((release) => release.since),
    ...((parsed.hooks as Json[] | undefined) ?? []).map((hook) => hook.since),
  ].filter((since) => since !== undefined);
  // Asked twice, a moment can move between the two (a Job's state changing in between): the caller polls again.
  if ([...moments].sort().join() !== [...expected].sort().join())
    throw new Error(`the text's moments ${moments.join(', ')} are not the JSON's ${expected.join(', ')}`);
  if (json.status !== text.status) throw new Error(`text exit ${text.status}, JSON exit ${json.status}`);
  return {
    status: json.status,
    text: text.stdout.replace(SINCE, ' since TIME (AGE)'),
    stderr: text.stderr,
    json: parsed,
    hook: ((parsed.hooks as Json[] | undefined) ?? [])[0] ?? {},
  };
}

/**
 * `hookguard why ARGS -o json` run in this process (test/support/command.ts), as the admin: what a wait polls. The CLI
 * as a process spends most of a second of CPU loading @kubernetes/client-node, so a poll of it every half second kept a
 * core busy; a wait polls this, then asks the real CLI (why()) for the answers it checks.
 */
export async function whyJson(args: readonly string[]): Promise<Json> {
  const answer = await runCommand(['why', ...args, '-o', 'json'], undefined, { KUBECONFIG: kubeconfig });
  if (answer.stdout === '') throw new Error(`why printed nothing (exit ${answer.status}): ${answer.stderr}`);
  return JSON.parse(answer.stdout) as Json;
}

/** The name the API server gives a Job's Pod (generateName `JOB-` and five of apimachinery's rand.String letters). */
export const GENERATED_POD = (job: string) => new RegExp(`pods "${job}-[bcdfghjklmnpqrstvwxz2456789]{5}"`, 'g');

/** The Pods of Job NAME in NS, by the label the Job controller puts on them. */
export async function jobPods(ns: string, name: string): Promise<Json[]> {
  return (await kubectlJson<{ items: Json[] }>(['get', 'pods', '-n', ns, '-l', `batch.kubernetes.io/job-name=${name}`]))
    .items;
}

export interface HookJob {
  name?: string;
  /** Labels of the Job (a Kueue queue, say). */
  labels?: Record<string, string>;
  /** Annotations of the Pod template: what the kubelet simulator plays (docs/testing.md). */
  podAnnotations?: Record<string, string>;
  podSpec?: Json;
  jobSpec?: Json;
}

/** A Helm pre-upgrade hook Job with one container `migrate`, asking 128Mi. */
export function hookJob(job: HookJob = {}): string {
  return JSON.stringify({
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: job.name ?? 'db-migrate',
      labels: job.labels,
      annotations: { 'helm.sh/hook': 'pre-upgrade', 'helm.sh/hook-delete-policy': 'before-hook-creation' },
    },
    spec: {
      backoffLimit: 0,
      ...job.jobSpec,
      template: {
        metadata: { annotations: job.podAnnotations ?? {} },
        spec: {
          restartPolicy: 'Never',
          ...job.podSpec,
          containers: [
            {
              name: 'migrate',
              image: 'registry.example.com/shop/migrate:2.4.1',
              command: ['/app/migrate', 'up'],
              resources: { limits: { memory: '128Mi' }, requests: { cpu: '100m', memory: '128Mi' } },
            },
          ],
        },
      },
    },
  });
}

export interface DenyingWebhook {
  /** A ValidatingWebhookConfiguration NAME sending the Pod CREATEs of namespace NS to this webhook. */
  configuration(name: string, ns: string): Json;
  close(): void;
}

/** Another admission webhook, as a policy engine runs one: it denies every Pod it is sent, with MESSAGE. */
export async function startDenyingWebhook(message: string): Promise<DenyingWebhook> {
  const pems = await generate([{ name: 'commonName', value: '127.0.0.1' }], {
    keySize: 2048,
    extensions: [{ name: 'subjectAltName', altNames: [{ type: 7, ip: '127.0.0.1' }] }],
  });
  const server: Server = createServer({ key: pems.private, cert: pems.cert }, (req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      const review = JSON.parse(body) as { request: { uid: string } };
      res.setHeader('content-type', 'application/json');
      res.end(
        JSON.stringify({
          apiVersion: 'admission.k8s.io/v1',
          kind: 'AdmissionReview',
          response: { uid: review.request.uid, allowed: false, status: { code: 403, message } },
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  const caBundle = Buffer.from(pems.cert).toString('base64');
  return {
    configuration: (name, ns) => ({
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name },
      webhooks: [
        {
          name: 'validate.policy.example',
          admissionReviewVersions: ['v1'],
          sideEffects: 'None',
          failurePolicy: 'Fail',
          clientConfig: { url: `https://127.0.0.1:${port}/validate`, caBundle },
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': ns } },
          rules: [{ apiGroups: [''], apiVersions: ['v1'], resources: ['pods'], operations: ['CREATE'] }],
        },
      ],
    }),
    close: () => server.close(),
  };
}

export interface Reader {
  /** system:serviceaccount:NS:NAME */
  user: string;
  token: string;
  /** A kubeconfig file for it, to the real API server. */
  kubeconfig: string;
}

/** A ServiceAccount NAME in NS holding only RULES there (a Role), with a kubeconfig for it written into DIR. */
export async function reader(ns: string, name: string, rules: Json[], dir: string): Promise<Reader> {
  await kubectl(
    ['apply', '-n', ns, '-f', '-'],
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'List',
      items: [
        { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name } },
        { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'Role', metadata: { name }, rules },
        {
          apiVersion: 'rbac.authorization.k8s.io/v1',
          kind: 'RoleBinding',
          metadata: { name },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name },
          subjects: [{ kind: 'ServiceAccount', name, namespace: ns }],
        },
      ],
    }),
  );
  const token = await serviceAccountToken(ns, name);
  const admin = await kubectlJson<Json>(['config', 'view', '--raw', '--minify']);
  const kubeconfig = `${dir}/kubeconfig-${ns}-${name}`;
  await writeFile(
    kubeconfig,
    JSON.stringify({
      apiVersion: 'v1',
      kind: 'Config',
      clusters: [{ name: 'c', cluster: admin.clusters[0].cluster }],
      users: [{ name, user: { token } }],
      contexts: [{ name: 'c', context: { cluster: 'c', user: name, namespace: ns } }],
      'current-context': 'c',
    }),
  );
  return { user: `system:serviceaccount:${ns}:${name}`, token, kubeconfig };
}

/** HELM (a path) ARGS as the admin, with its own cache, config and data under HOME, and a --timeout of 120 s. */
export function helm(helmPath: string, home: string, args: readonly string[], env: Record<string, string> = {}) {
  return run(helmPath, [...args, '--timeout', '120s'], {
    env: {
      HELM_CACHE_HOME: `${home}/cache`,
      HELM_CONFIG_HOME: `${home}/config`,
      HELM_DATA_HOME: `${home}/data`,
      ...env,
    },
  });
}
