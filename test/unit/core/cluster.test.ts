import { describe, expect, it } from 'vitest';
import { clusterFactsFrom, isOpenShift } from '../../../src/core/cluster.js';

const group = (name: string) => ({
  name,
  versions: [{ groupVersion: `${name}/v1`, version: 'v1' }],
  preferredVersion: { groupVersion: `${name}/v1`, version: 'v1' },
});

describe('clusterFactsFrom: the APIGroupList of GET /apis', () => {
  it.each([
    [
      'OpenShift: security.openshift.io is served',
      { kind: 'APIGroupList', apiVersion: 'v1', groups: [group('apps'), group('security.openshift.io')] },
      { openshift: true },
    ],
    [
      'a plain cluster',
      { kind: 'APIGroupList', apiVersion: 'v1', groups: [group('apps'), group('batch')] },
      { openshift: false },
    ],
    [
      'a look-alike group name is not it',
      { kind: 'APIGroupList', groups: [group('security.openshift.io.example.com'), null, 'x'] },
      { openshift: false },
    ],
    ['a Status body (an error a proxy passed on)', { kind: 'Status', status: 'Failure', code: 403 }, undefined],
    ['groups that are not a list', { kind: 'APIGroupList', groups: { name: 'security.openshift.io' } }, undefined],
    ['not an object', 'security.openshift.io', undefined],
    ['null', null, undefined],
  ])('%s', (_name, body, expected) => {
    expect(clusterFactsFrom(body)).toEqual(expected);
  });
});

describe('isOpenShift: rules.minRuntime.openshift with what discovery found', () => {
  it.each([
    ['auto', { openshift: true }, true],
    ['auto', { openshift: false }, false],
    ['auto', undefined, false],
    ['true', { openshift: false }, true],
    ['true', undefined, true],
    ['false', { openshift: true }, false],
  ] as const)('%s with %j: %s', (setting, cluster, expected) => {
    expect(isOpenShift(setting, cluster)).toBe(expected);
  });
});
