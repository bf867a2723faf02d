// hookguard without a webhook, on the real control plane (kube-apiserver 1.37.2, `npm run cluster:up`, which writes
// .cluster/kubeconfig): `hookguard policies | kubectl apply -f -`, then every hook fixture created through kubectl.
// Each stored object must be what the webhook would store for the rules the policies cover (decide() at admission,
// with those rules only, on the object the same API server defaults with the policies off: test/support/
// policy-reference.ts), and the API server's warnings must carry the deadline warning exactly where decide() has it.
//
// Why decide() and not `hookguard check --fix`: check works at render time, where delete-policy writes
// hook-succeeded into a Helm hook's manifest, so hook-ttl (rightly) sets no TTL there; at admission the policies, as
// the webhook, see the object as the chart wrote it and give it the TTL. The reference must be the admission stage.
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { stringify } from 'yaml';
import type { KubeObject } from '../../src/core/types.js';
import { ANNOTATION_READ_LIMIT } from '../../src/policies/cel.js';
import { runCli } from '../support/cli.js';
import { fixtureText, loadFixtures } from '../support/fixtures.js';
import { byWebhook, contextOf } from '../support/policy-reference.js';
import {
  AUDIT_NAMESPACE_LABEL,
  binDir,
  deleteNamespace,
  describeCluster,
  kubeconfig,
  kubectlPath,
  newNamespace,
  run,
} from './support/cluster.js';
import { PROBE_HOOKS, untilEveryPolicyActs } from './support/policy-probes.js';

const execFileAsync = promisify(execFile);

/** What test/cluster/tools/celcost prints. */
interface CelCostReport {
  limits: { perCall: number; matchConditions: number; runtime: number };
  rows: Array<{ policy: string; expression: string; group: string; maxCost: number; maxOn: string; evaluated: number }>;
  groupMax: Record<string, Record<string, number>>;
  errors: Array<{ policy: string; expression: string; object: string; message: string }> | null;
  spent: Record<string, number>;
  milliseconds: Record<string, number>;
}
// Out of the cluster's hookguard webhook (test/cluster/cluster.js installs it for namespaces without this label):
// here the policies alone admit, or the test would compare the webhook with the webhook.
const WEBHOOK_OUT_OF_REACH = { [AUDIT_NAMESPACE_LABEL]: 'policies' };
let namespace = '';

/** kubectl with its stderr too: the API server's warnings are part of what is checked. */
async function kubectl(args: readonly string[], input?: string): Promise<{ stdout: string; stderr: string }> {
  const child = execFileAsync(kubectlPath, [...args], {
    env: { ...process.env, KUBECONFIG: kubeconfig },
    maxBuffer: 16 * 1024 * 1024,
  });
  if (input !== undefined) {
    child.child.stdin?.end(input);
  }
  return child;
}

/**
 * What a fixture is sent as: in the test namespace, its own namespace dropped, named after its file (two charts name
 * their hooks alike).
 */
function sent(file: string, object: KubeObject): KubeObject {
  const copy = structuredClone(object);
  const metadata = (copy.metadata ??= {}) as Record<string, unknown>;
  delete metadata.namespace;
  metadata.name = file.replace(/\.yaml$/, '');
  return copy;
}

/** `kubectl create -o json` (dry run or not): the object as the API server stores it, and the warnings it said. */
async function create(object: KubeObject, dryRun: boolean): Promise<{ stored: KubeObject; warnings: string[] }> {
  const { stdout, stderr } = await kubectl(
    ['create', '-n', namespace, '-o', 'json', ...(dryRun ? ['--dry-run=server'] : []), '-f', '-'],
    JSON.stringify(object),
  );
  const warnings = [...stderr.matchAll(/^Warning: (.*)$/gm)].map((match) => match[1]!);
  return { stored: JSON.parse(stdout) as KubeObject, warnings };
}

/** The parts of a stored hook the policies cover, by container name where they are per container. */
function covered(object: KubeObject): Record<string, unknown> {
  const spec = object.spec as Record<string, any>;
  const podSpec = object.kind === 'Job' ? spec.template.spec : spec;
  const containers = [...(podSpec.initContainers ?? []), ...podSpec.containers] as Array<Record<string, unknown>>;
  return {
    label: object.metadata?.labels?.['hookguard.io/hook'],
    ttlSecondsAfterFinished: spec.ttlSecondsAfterFinished,
    backoffLimit: spec.backoffLimit,
    restartPolicy: podSpec.restartPolicy,
    terminationMessagePolicies: Object.fromEntries(
      containers.map((container) => [container.name, container.terminationMessagePolicy]),
    ),
  };
}

const hooks = loadFixtures().filter(({ object }) => object.kind === 'Job' || object.kind === 'Pod');

describeCluster('hookguard policies on kube-apiserver 1.37.2', () => {
  let username = '';
  const manifests = new Map<string, KubeObject>();
  const admitted = new Map<string, KubeObject>();

  beforeAll(async () => {
    username = JSON.parse((await kubectl(['auth', 'whoami', '-o', 'json'])).stdout).status.userInfo.username;
    namespace = await newNamespace('policies', WEBHOOK_OUT_OF_REACH);
    // Each manifest as the real kubectl reads it (YAML 1.1: `defaultMode: 0777` is 511), then as this API server
    // defaults it, before any policy: what decide() is given.
    for (const { file } of hooks) {
      const read = JSON.parse(
        (await kubectl(['create', '--dry-run=client', '-o', 'json', '-f', '-'], fixtureText(file))).stdout,
      );
      manifests.set(file, sent(file, read as KubeObject));
      admitted.set(file, (await create(manifests.get(file)!, true)).stored);
    }
    for (const probe of PROBE_HOOKS) admitted.set(probe.metadata!.name!, (await create(probe, true)).stored);
    const policies = runCli(['policies']);
    expect(policies.status).toBe(0);
    await kubectl(['apply', '-f', '-'], policies.stdout);
    await untilEveryPolicyActs(create);
  }, 120_000);

  afterAll(async () => {
    await deleteNamespace(namespace);
    await kubectl([
      'delete',
      'mutatingadmissionpolicies,mutatingadmissionpolicybindings,validatingadmissionpolicies,validatingadmissionpolicybindings',
      '-l',
      'hookguard.io/policies=generated',
    ]).catch(() => undefined);
  });

  it.each(hooks.map(({ file }) => file))(
    '%s is stored as the webhook stores it, for the rules the policies cover',
    async (file) => {
      const { stored, warnings } = await create(manifests.get(file)!, false);
      const webhook = byWebhook(contextOf({}), admitted.get(file)!, username);
      expect(covered(stored)).toEqual(covered(webhook.stored));
      const deadline = warnings.filter((warning) => warning.includes('[hook-deadline]'));
      expect(deadline).toEqual(
        webhook.warnings.map(
          (message) =>
            `Validation failed for ValidatingAdmissionPolicy 'hookguard-hook-deadline' with binding 'hookguard-hook-deadline': ${message}`,
        ),
      );
    },
  );

  it("stays within the API server's CEL cost limits on every hook, and reads no annotation too long to read in linear time", async () => {
    // celcost (test/cluster/tools/celcost) runs each policy's expressions with k8s.io/apiserver v0.37.2's own
    // compiler and evaluators and reports the runtime cost they spend: what the API server holds against its limits
    // (it estimates no cost for an admission policy: `object` is dyn). On every fixture, the probes, and hooks whose
    // annotations are as long as the API server admits (256 KiB in all), which before ANNOTATION_READ_LIMIT held a
    // create for the whole request timeout.
    const policies = JSON.parse(runCli(['policies', '--output', 'json']).stdout) as { items: KubeObject[] };
    const hostileBase = admitted.get('probe-cleanup')!;
    const hostile = (name: string, annotations: Record<string, string>): KubeObject => ({
      ...hostileBase,
      metadata: { ...hostileBase.metadata, name, annotations },
    });
    const commas = ','.repeat(255 * 1024);
    // Three annotations of 80 KiB each: 240 KiB, under the API server's 256 KiB for all of an object's annotations.
    const someCommas = commas.slice(0, 80 * 1024);
    const objects = new Map([
      ...admitted,
      ['many-commas-hook', hostile('many-commas-hook', { 'helm.sh/hook': `pre-delete${commas}` })],
      ['many-commas-skip', hostile('many-commas-skip', { 'helm.sh/hook': 'pre-delete', 'hookguard.io/skip': commas })],
      [
        'many-commas-argo',
        hostile('many-commas-argo', {
          'argocd.argoproj.io/hook': `PreDelete${someCommas}`,
          'argocd.argoproj.io/hook-delete-policy': someCommas,
          'helm.sh/hook-delete-policy': someCommas,
        }),
      ],
      [
        'longest-read',
        hostile('longest-read', {
          'helm.sh/hook': `pre-delete${','.repeat(ANNOTATION_READ_LIMIT - 10)}`,
          'helm.sh/hook-delete-policy': ','.repeat(ANNOTATION_READ_LIMIT),
          'hookguard.io/skip': ','.repeat(ANNOTATION_READ_LIMIT),
        }),
      ],
    ]);
    const input = {
      policies: policies.items.filter((object) => object.kind?.endsWith('Policy')),
      params: policies.items.find((object) => object.kind === 'ConfigMap'),
      objects: [...objects].map(([name, object]) => ({ name, namespace, object })),
    };
    const measured = await run(join(binDir, 'celcost'), [], { input: JSON.stringify(input) });
    expect([measured.status, measured.stderr]).toEqual([0, '']);
    const report = JSON.parse(measured.stdout) as CelCostReport;
    if (process.env.HOOKGUARD_CELCOST_REPORT) writeFileSync(process.env.HOOKGUARD_CELCOST_REPORT, stringify(report));
    expect(report.errors ?? []).toEqual([]);
    // Every expression ran on some object: a cost never measured would pass any limit.
    expect(report.rows.filter((row) => row.evaluated === 0).map((row) => `${row.policy} ${row.expression}`)).toEqual(
      [],
    );
    for (const row of report.rows)
      expect(row.maxCost, `${row.policy} ${row.expression}`).toBeLessThanOrEqual(report.limits.perCall);
    for (const [policy, groups] of Object.entries(report.groupMax))
      for (const [group, cost] of Object.entries(groups))
        expect(cost, `${policy} ${group}`).toBeLessThanOrEqual(
          group === 'matchConditions' ? report.limits.matchConditions : report.limits.runtime,
        );
    // Bounded: a hook with 255 KiB of commas costs no more than the longest annotations the policies read.
    for (const name of ['many-commas-hook', 'many-commas-skip', 'many-commas-argo'])
      expect(report.spent[name], name).toBeLessThanOrEqual(report.spent['longest-read']!);
  });

  it('the policies type-check on the API server: no expression warnings in their status', async () => {
    const { stdout } = await kubectl([
      'get',
      'validatingadmissionpolicies',
      '-l',
      'hookguard.io/policies',
      '-o',
      'json',
    ]);
    for (const policy of JSON.parse(stdout).items as Array<Record<string, any>>)
      expect(stringify(policy.status?.typeChecking?.expressionWarnings ?? [])).toBe('[]\n');
  });
});
