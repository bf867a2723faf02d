// Waiting until the generated admission policies act. The API server's admission-policy plugins learn each policy, its
// binding and the parameters ConfigMap from their own informers, at their own moments: once, in CI, the mutating
// policies labelled a probe while the ValidatingAdmissionPolicy hookguard-hook-deadline had not yet taken effect, and
// the first fixtures were created without its warning. So each generated policy gets a probe it visibly acts on, and
// a test starts only when all of them have.
import type { KubeObject } from '../../../src/core/types.js';
import { waitUntil } from '../../support/wait-until.js';

type Create = (object: KubeObject, dryRun: true) => Promise<{ stored: KubeObject; warnings: string[] }>;

function hookJob(name: string, annotations: Record<string, string>, spec: Record<string, unknown>): KubeObject {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name, annotations },
    spec: {
      ...spec,
      template: { spec: { restartPolicy: 'Never', containers: [{ name: 'probe', image: 'busybox' }] } },
    },
  };
}

// A Helm cleanup hook with no retries, no TTL, no deadline and no termination message policy.
const cleanupJob = hookJob('probe-cleanup', { 'helm.sh/hook': 'pre-delete' }, { backoffLimit: 0 });
// An Argo CD sync hook deleted the moment it finishes.
const argoSyncJob = hookJob('probe-argo-sync', { 'argocd.argoproj.io/hook': 'Sync' }, { ttlSecondsAfterFinished: 0 });
// A Helm test Pod that would restart for ever.
const testPod: KubeObject = {
  apiVersion: 'v1',
  kind: 'Pod',
  metadata: { name: 'probe-test', annotations: { 'helm.sh/hook': 'test' } },
  spec: { restartPolicy: 'Always', containers: [{ name: 'probe', image: 'busybox' }] },
};

/** The probes, one of each kind of hook the policies change. */
export const PROBE_HOOKS: readonly KubeObject[] = [cleanupJob, argoSyncJob, testPod];

const spec = (object: KubeObject): Record<string, any> => object.spec as Record<string, any>;

/** Each generated policy, and whether it has acted on its probe's server dry run. */
const PROBES: ReadonlyArray<{
  policy: string;
  probe: KubeObject;
  acted: (stored: KubeObject, warnings: string[]) => boolean;
}> = [
  {
    policy: 'hookguard-hook-label',
    probe: cleanupJob,
    acted: (stored) => stored.metadata?.labels?.['hookguard.io/hook'] === 'admitted',
  },
  {
    policy: 'hookguard-hook-ttl',
    probe: cleanupJob,
    acted: (stored) => spec(stored).ttlSecondsAfterFinished !== undefined,
  },
  { policy: 'hookguard-idempotent-cleanup', probe: cleanupJob, acted: (stored) => spec(stored).backoffLimit > 0 },
  {
    policy: 'hookguard-termination-message-policy',
    probe: cleanupJob,
    acted: (stored) => spec(stored).template.spec.containers[0].terminationMessagePolicy === 'FallbackToLogsOnError',
  },
  {
    policy: 'hookguard-hook-deadline',
    probe: cleanupJob,
    acted: (_, warnings) => warnings.some((warning) => warning.includes('[hook-deadline]')),
  },
  { policy: 'hookguard-ttl-floor', probe: argoSyncJob, acted: (stored) => spec(stored).ttlSecondsAfterFinished > 0 },
  {
    policy: 'hookguard-hook-pod-restart-policy',
    probe: testPod,
    acted: (stored) => spec(stored).restartPolicy === 'Never',
  },
];

/** Resolves once a server dry run of each probe shows every generated policy acting; names the laggards if not. */
export async function untilEveryPolicyActs(create: Create, seconds = 60): Promise<void> {
  await waitUntil(
    'every generated admission policy to act',
    async () => {
      const answers = new Map<KubeObject, Awaited<ReturnType<Create>>>();
      for (const { probe } of PROBES) if (!answers.has(probe)) answers.set(probe, await create(probe, true));
      const idle = PROBES.filter(({ probe, acted }) => {
        const { stored, warnings } = answers.get(probe)!;
        return !acted(stored, warnings);
      }).map(({ policy }) => policy);
      if (idle.length > 0) throw new Error(`not acting yet: ${idle.join(', ')}`);
      return true;
    },
    seconds,
  );
}
