// Issue 37 item 8: a reflector calls no handler after stop(), even for a list the API server answers afterwards.
import { KubeConfig } from '@kubernetes/client-node';
import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../../src/core/types.js';
import { Reflector, type ListResult } from '../../../src/kube/reflector.js';

describe('Reflector.stop()', () => {
  it('calls no handler for a list answered after stop()', async () => {
    let answer: (list: ListResult) => void = () => undefined;
    let listed = false;
    const changes: (readonly KubeObject[])[] = [];
    const reflector = new Reflector(
      new KubeConfig(),
      {
        description: 'hook Jobs',
        path: '/apis/batch/v1/jobs',
        labelSelector: 'hookguard.io/hook=true',
        list: () => {
          listed = true;
          return new Promise<ListResult>((resolve) => (answer = resolve));
        },
      },
      { backoff: { initialMs: 10, maxMs: 100 }, watchTimeoutSeconds: 30 },
      pino({ level: 'silent' }),
      (objects) => changes.push(objects),
    );
    reflector.start();
    await new Promise((resolve) => setImmediate(resolve));
    expect(listed).toBe(true);
    const stopped = reflector.stop();
    answer({ items: [{ metadata: { name: 'late', namespace: 'apps', uid: 'u1' } }], resourceVersion: '7' });
    await stopped;
    expect(changes).toEqual([]);
  });
});
