// The rules for hooks that never finish (hook-deadline, hook-pod-restart-policy, mesh-sidecar, hook-sync-options),
// through the real API server to the cluster's hookguard (enforce mode), over real chart manifests from
// test/fixtures: a Job in a namespace Istio injects (hookguard's namespace watch reads the real Namespace), an Argo
// CD hook Pod whose manifest sets no restartPolicy (the API server defaults it to Always before the webhooks), and
// sync options on a hook Argo CD applies. What kubectl prints (the warnings) and what the API server stores.
import { parse } from 'yaml';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { fixtureText } from '../support/fixtures.js';
import { stripNullFields } from '../support/k8s-schema.js';
import { ARGOCD_CONTROLLER } from '../support/objects.js';
import {
  allowArgoCdController,
  deleteNamespace,
  describeCluster,
  kubectlPath,
  newNamespace,
  run,
  waitUntil,
} from './support/cluster.js';

type Json = Record<string, any>;

const fixture = (file: string): Json => stripNullFields(parse(fixtureText(file))) as Json;

// hook-deadline sets no deadline by default; it names the missing one.
const DEADLINE_WARNING =
  'Warning: hookguard [hook-deadline]: no spec.activeDeadlineSeconds: if its Pod never starts, this hook waits forever';
const MESH_WARNING =
  'Warning: hookguard [mesh-sidecar]: istio-proxy may keep this Job running; pod label sidecar.istio.io/inject=false fixes it (name…';

describeCluster('hooks that never finish, through the real API server', () => {
  let ns = '';
  beforeAll(async () => {
    // In hookguard's reach, Istio's injection on, and Argo CD's controller allowed to create there.
    ns = await newNamespace('never-finish', { 'istio-injection': 'enabled' });
    await allowArgoCdController(ns);
  });
  beforeAll(async () => {
    // hookguard reads the namespace's labels from its watch: a create just after the namespace may come before.
    const job = fixture('ingress-nginx-admission-create.yaml');
    await waitUntil('hookguard to see the namespace label', async () =>
      (await create(job, { dry: true })).warnings.includes(MESH_WARNING),
    );
  });
  afterAll(async () => {
    await deleteNamespace(ns);
  });

  /** `kubectl create` of OBJECT in the namespace (as USER, with --dry-run=server when DRY): the stored object, the warnings. */
  async function create(object: Json, options: { as?: string; dry?: boolean } = {}) {
    const result = await run(
      kubectlPath,
      [
        'create',
        '-n',
        ns,
        '-o',
        'json',
        '-f',
        '-',
        ...(options.as ? [`--as=${options.as}`] : []),
        ...(options.dry ? ['--dry-run=server'] : []),
      ],
      { input: JSON.stringify({ ...object, metadata: { ...object.metadata, namespace: ns } }) },
    );
    if (result.status !== 0) throw new Error(`kubectl create: ${result.stderr}`);
    return { stored: JSON.parse(result.stdout) as Json, warnings: result.stderr.split('\n').filter(Boolean) };
  }

  it.concurrent(
    'a Helm hook Job in a namespace Istio injects: its TTL floor, the log fallback, and what it cannot fix, said',
    async () => {
      const { stored, warnings } = await create(fixture('ingress-nginx-admission-create.yaml'));
      expect(warnings).toEqual([DEADLINE_WARNING, MESH_WARNING]);
      // Its TTL of 0 up to the floor (a Helm hook: helm#31786), the fallback to its logs, the watcher's label; no deadline.
      expect(stored.spec.ttlSecondsAfterFinished).toBe(60);
      expect(stored.spec.activeDeadlineSeconds).toBeUndefined();
      expect(stored.spec.template.spec.containers[0].terminationMessagePolicy).toBe('FallbackToLogsOnError');
      expect(stored.metadata.labels['hookguard.io/hook']).toBe('admitted');
    },
  );

  it.concurrent(
    'an Argo CD hook Pod whose manifest sets no restartPolicy: the API server defaults Always, hookguard stores Never',
    async () => {
      const pod = fixture('argo-cd-e2e-hook-sync-pod.yaml');
      delete pod.spec.restartPolicy;
      const { stored } = await create(pod, { as: ARGOCD_CONTROLLER, dry: true });
      expect(stored.spec.restartPolicy).toBe('Never');
    },
  );

  it.concurrent('sync options on a hook Argo CD applies: a warning, nothing changed by it', async () => {
    const job = fixture('argocd-example-apps-helm-hooks-upgrade-sql-schema.yaml');
    job.metadata.annotations['argocd.argoproj.io/sync-options'] = 'Force=true,Replace=true';
    const { stored, warnings } = await create(job, { as: ARGOCD_CONTROLLER, dry: true });
    expect(warnings).toEqual([
      DEADLINE_WARNING,
      MESH_WARNING,
      'Warning: hookguard [hook-sync-options]: sync-options Replace=true,Force=true: Argo CD deletes and re-creates this hook (replace …',
    ]);
    expect(stored.metadata.annotations['argocd.argoproj.io/sync-options']).toBe('Force=true,Replace=true');
  });
});
