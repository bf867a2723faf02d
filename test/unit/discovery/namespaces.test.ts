import { describe, expect, it } from 'vitest';
import type { KubeObject } from '../../../src/core/types.js';
import { namespacesFrom } from '../../../src/discovery/namespaces.js';

const KEYS = { labels: ['istio-injection', 'istio.io/rev'], annotations: ['linkerd.io/inject'] };

const namespace = (name: unknown, labels?: unknown, annotations?: unknown): KubeObject =>
  ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels, annotations } }) as KubeObject;

describe('namespacesFrom', () => {
  it.each<[string, KubeObject[], unknown[]]>([
    [
      'keeps only the keys rules read',
      [namespace('apps', { 'istio-injection': 'enabled', team: 'a' }, { 'linkerd.io/inject': 'enabled', owner: 'x' })],
      [{ name: 'apps', labels: { 'istio-injection': 'enabled' }, annotations: { 'linkerd.io/inject': 'enabled' } }],
    ],
    [
      'an annotation alone',
      [namespace('mesh', undefined, { 'linkerd.io/inject': 'disabled' })],
      [{ name: 'mesh', labels: {}, annotations: { 'linkerd.io/inject': 'disabled' } }],
    ],
    ['drops namespaces with none of them', [namespace('plain', { team: 'b' }), namespace('bare')], []],
    [
      'ignores values that are not strings, and objects without a name',
      [namespace('odd', { 'istio-injection': 5 }, 'not a map'), namespace(undefined, { 'istio.io/rev': 'canary' })],
      [],
    ],
  ])('%s', (_name, objects, expected) => {
    expect([...namespacesFrom(objects, KEYS).values()]).toEqual(expected);
  });
});
