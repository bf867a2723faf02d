import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { applyPatch } from '../../../src/core/json-patch.js';
import type { KubeObject } from '../../../src/core/types.js';
import { terminationMessagePolicy } from '../../../src/rules/termination-message-policy.js';
import { admitWithOnly, contextFor, hookJob, hookPod } from '../../support/objects.js';

const FALLBACK = 'FallbackToLogsOnError';

const admit = (object: KubeObject, config: Record<string, string> = {}) =>
  admitWithOnly('termination-message-policy', object, config);

function jobWith(containers: object[], initContainers?: object[]): KubeObject {
  return hookJob(undefined, {
    template: { spec: { restartPolicy: 'Never', containers, ...(initContainers ? { initContainers } : {}) } },
  });
}

describe('termination-message-policy', () => {
  it('sets FallbackToLogsOnError on each container left at File (as the API server defaults it), one op each', () => {
    const job = jobWith(
      [
        { name: 'main', image: 'a', terminationMessagePolicy: 'File' },
        { name: 'side', image: 'b', terminationMessagePolicy: FALLBACK },
      ],
      [{ name: 'init', image: 'c' }],
    );
    expect(admit(job).patch).toEqual([
      { op: 'add', path: '/spec/template/spec/initContainers/0/terminationMessagePolicy', value: FALLBACK },
      { op: 'replace', path: '/spec/template/spec/containers/0/terminationMessagePolicy', value: FALLBACK },
    ]);
  });

  it("on a bare Pod, and never on hookguard's guard", () => {
    const pod = hookPod({ 'helm.sh/hook': 'post-install' });
    (pod.spec as { initContainers: object[] }).initContainers = [{ name: 'hookguard-min-runtime', image: 'busybox' }];
    const report = terminationMessagePolicy.mutate(pod, contextFor(pod));
    expect(report.mutations).toEqual([
      `set terminationMessagePolicy ${FALLBACK} on main: a failed container keeps its last log lines in its status`,
    ]);
    expect((pod.spec as { initContainers: object[] }).initContainers).toEqual([
      { name: 'hookguard-min-runtime', image: 'busybox' },
    ]);
  });

  it('leaves a policy it does not know, and changes nothing the second time', () => {
    const job = jobWith([{ name: 'main', image: 'a', terminationMessagePolicy: 'Custom' }]);
    expect(terminationMessagePolicy.mutate(job, contextFor(job))).toEqual({ mutations: [], warnings: [] });
    const once = jobWith([{ name: 'main', image: 'a' }]);
    terminationMessagePolicy.mutate(once, contextFor(once));
    const after = structuredClone(once);
    expect(terminationMessagePolicy.mutate(once, contextFor(once))).toEqual({ mutations: [], warnings: [] });
    expect(once).toEqual(after);
  });

  it('is off with rules.terminationMessagePolicy.enabled false', () => {
    expect(
      admit(jobWith([{ name: 'main', image: 'a' }]), { 'rules.terminationMessagePolicy.enabled': 'false' }).patch,
    ).toEqual([]);
  });
});

describe('termination-message-policy, as a property', () => {
  const policy = fc.constantFrom(undefined, 'File', FALLBACK);
  const container = fc.record({ name: fc.constantFrom('main', 'side', 'hookguard-min-runtime'), policy });
  it('leaves no container but the guard at File, changes only that field, and changes nothing the second time', () => {
    fc.assert(
      fc.property(
        fc.array(container, { minLength: 1, maxLength: 4 }),
        fc.array(container, { maxLength: 2 }),
        (main, init) => {
          const spec = (list: typeof main) =>
            list.map(({ name, policy: chosen }) => ({
              name,
              image: 'a',
              ...(chosen ? { terminationMessagePolicy: chosen } : {}),
            }));
          const job = jobWith(spec(main), init.length > 0 ? spec(init) : undefined);
          const first = admit(structuredClone(job));
          expect(first.patch.every((op) => op.path.endsWith('/terminationMessagePolicy') && op.op !== 'remove')).toBe(
            true,
          );
          const stored = applyPatch(structuredClone(job), first.patch, true, false).newDocument;
          const podSpec = (
            stored.spec as { template: { spec: Record<string, { name: string; terminationMessagePolicy?: string }[]> } }
          ).template.spec;
          for (const each of [...(podSpec.initContainers ?? []), ...(podSpec.containers ?? [])])
            if (each.name !== 'hookguard-min-runtime') expect(each.terminationMessagePolicy).toBe(FALLBACK);
          expect(admit(stored).patch).toEqual([]);
        },
      ),
      { numRuns: 200, seed: 20261127 },
    );
  });
});
