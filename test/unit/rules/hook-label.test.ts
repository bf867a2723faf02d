import { describe, expect, it } from 'vitest';
import { decisionContext } from '../../../src/config/decision-context.js';
import { loadConfig } from '../../../src/config/load.js';
import { decide } from '../../../src/core/decide.js';
import type { KubeObject } from '../../../src/core/types.js';
import { hookLabel } from '../../../src/rules/hook-label.js';
import { admitWithOnly, contextFor, hookJob, hookPod } from '../../support/objects.js';

const SET = "set label hookguard.io/hook: admitted: hookguard's hook watcher follows it";

const admit = (object: KubeObject, config: Record<string, string> = {}) => admitWithOnly('hook-label', object, config);

describe('hook-label', () => {
  it.each([
    [
      'a Job without labels',
      hookJob(),
      [{ op: 'add', path: '/metadata/labels', value: { 'hookguard.io/hook': 'admitted' } }],
    ],
    [
      'a Pod with labels',
      {
        ...hookPod({ 'helm.sh/hook': 'post-install' }),
        metadata: {
          name: 'p',
          namespace: 'apps',
          labels: { app: 'x' },
          annotations: { 'helm.sh/hook': 'post-install' },
        },
      },
      [{ op: 'add', path: '/metadata/labels/hookguard.io~1hook', value: 'admitted' }],
    ],
  ])('labels %s with exactly one add op', (_name, object, patch) => {
    expect(admit(object).patch).toEqual(patch);
  });

  it('leaves a label the author set (any value keeps the hook out of the watcher), and is idempotent', () => {
    const job = hookJob();
    job.metadata!.labels = { 'hookguard.io/hook': 'ignore' };
    expect(hookLabel.mutate(job, contextFor(job))).toEqual({ mutations: [], warnings: [] });
    const again = hookJob();
    expect(hookLabel.mutate(again, contextFor(again)).mutations).toEqual([SET]);
    expect(hookLabel.mutate(again, contextFor(again))).toEqual({ mutations: [], warnings: [] });
    expect(again.metadata?.labels).toEqual({ 'hookguard.io/hook': 'admitted' });
  });

  it('is off with rules.hookLabel.enabled false, and never at render time', () => {
    expect(admit(hookJob(), { 'rules.hookLabel.enabled': 'false' }).patch).toEqual([]);
    const job = hookJob();
    expect(
      decide(
        { uid: 'u', operation: 'CREATE', namespace: 'apps', userInfo: { username: 'u' }, object: job },
        'mutate',
        decisionContext(loadConfig(), undefined, 'render'),
      ).rules,
    ).not.toContain('hook-label');
  });
});
