import { describe, expect, it } from 'vitest';
import { idempotentCleanup } from '../../../src/rules/idempotent-cleanup.js';
import type { Container, JobSpec, KubeObject } from '../../../src/core/types.js';
import { contextFor, hookJob, hookPod } from '../../support/objects.js';

function firstContainer(object: KubeObject): Container {
  const spec = object.kind === 'Pod' ? object.spec : (object.spec as JobSpec).template?.spec;
  return (spec?.containers as Container[])[0]!;
}

function jobRunning(
  container: Container,
  annotations: Record<string, string>,
  spec: Record<string, unknown> = {},
): KubeObject {
  const job = hookJob(annotations, spec);
  (job.spec as JobSpec).template!.spec!.containers = [{ name: 'cleanup', ...container }];
  return job;
}

describe('idempotent-cleanup', () => {
  it.each([
    [
      'exec form',
      { image: 'registry.k8s.io/kubectl:v1.32.7', command: ['kubectl', 'delete', 'cm', 'state'] },
      { image: 'registry.k8s.io/kubectl:v1.32.7', command: ['kubectl', 'delete', 'cm', 'state', '--ignore-not-found'] },
    ],
    [
      'args-only container of a kubectl image',
      { image: 'bitnami/kubectl:1.32.3', args: ['-n', 'apps', 'delete', 'secret', 'token'] },
      { image: 'bitnami/kubectl:1.32.3', args: ['-n', 'apps', 'delete', 'secret', 'token', '--ignore-not-found'] },
    ],
    [
      'sh -c script',
      {
        image: 'bitnami/kubectl:1.32.3',
        command: ['/bin/sh', '-c'],
        args: ['kubectl get po -o name | xargs kubectl delete\necho done'],
      },
      {
        image: 'bitnami/kubectl:1.32.3',
        command: ['/bin/sh', '-c'],
        args: ['kubectl get po -o name | xargs kubectl delete --ignore-not-found\necho done'],
      },
    ],
    [
      'already idempotent',
      { image: 'bitnami/kubectl:1.32.3', command: ['kubectl', 'delete', '--ignore-not-found', 'cm', 'state'] },
      { image: 'bitnami/kubectl:1.32.3', command: ['kubectl', 'delete', '--ignore-not-found', 'cm', 'state'] },
    ],
    [
      'args-only container of another image',
      { image: 'example.com/tool:1', args: ['delete', 'cm', 'state'] },
      { image: 'example.com/tool:1', args: ['delete', 'cm', 'state'] },
    ],
  ])('%s', (_name, container, expected) => {
    const job = jobRunning(container, { 'helm.sh/hook': 'pre-upgrade' });
    idempotentCleanup.mutate(job, contextFor(job));
    expect(firstContainer(job)).toEqual({ name: 'cleanup', ...expected });
  });

  it.each([
    ['post-delete', 1, 3],
    ['pre-delete', 0, 3],
    ['post-delete', 5, 5],
    ['post-delete', undefined, undefined],
    ['pre-upgrade', 0, 0],
  ])('a %s hook with backoffLimit %s ends with %s', (phase, backoffLimit, expected) => {
    const job = hookJob({ 'helm.sh/hook': phase }, backoffLimit === undefined ? {} : { backoffLimit });
    idempotentCleanup.mutate(job, contextFor(job));
    expect((job.spec as JobSpec).backoffLimit).toBe(expected);
  });

  it('treats Argo CD PreDelete and PostDelete as cleanup', () => {
    const job = hookJob({ 'argocd.argoproj.io/hook': 'PostDelete' }, { backoffLimit: 0 });
    expect(idempotentCleanup.mutate(job, contextFor(job)).mutations).toEqual([
      "raised spec.backoffLimit from 0 to 3: a cleanup that fails once is retried before the Application's deletion fails on it",
    ]);
  });

  it('rewrites init containers and bare Pods', () => {
    const pod = hookPod({ 'helm.sh/hook': 'post-delete' });
    (pod.spec as { initContainers: Container[] }).initContainers = [
      { name: 'first', command: ['kubectl', 'delete', 'ns', 'tmp'] },
    ];
    idempotentCleanup.mutate(pod, contextFor(pod));
    expect((pod.spec as { initContainers: Container[] }).initContainers[0]?.command).toEqual([
      'kubectl',
      'delete',
      'ns',
      'tmp',
      '--ignore-not-found',
    ]);
    expect(firstContainer(pod).command).toEqual(['true']);
  });
});
