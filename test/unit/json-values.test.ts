// cloneForRules and jsonEqual replace structuredClone and util.isDeepStrictEqual on the decision's hot path (see
// docs/benchmark.md): the copy must equal the original, and the comparison give util's answers on JSON values.
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { cloneForRules, jsonEqual } from '../../src/core/objects.js';
import type { KubeObject, ObjectMeta, PodSpec } from '../../src/core/types.js';

describe('cloneForRules', () => {
  const job = (): KubeObject =>
    JSON.parse(
      JSON.stringify({
        apiVersion: 'batch/v1',
        kind: 'Job',
        metadata: { name: 'm', annotations: { a: '1' }, labels: { l: '1' }, finalizers: ['f'] },
        spec: {
          backoffLimit: 1,
          template: {
            metadata: { annotations: { b: '2' } },
            spec: {
              initContainers: [{ name: 'init', env: [{ name: 'E', value: 'v' }] }],
              containers: [{ name: 'main', command: ['sh', '-c', 'true'], resources: { limits: { cpu: '1' } } }, 'odd'],
              volumes: [{ name: 'v', emptyDir: {} }],
            },
          },
        },
      }),
    ) as KubeObject;

  it('copies what a rule may write into and shares everything below it, equal to the original', () => {
    const object = job();
    const copy = cloneForRules(object) as KubeObject & { spec: { template: { metadata: ObjectMeta; spec: PodSpec } } };
    const original = object as typeof copy;
    expect(copy).toStrictEqual(structuredClone(object));
    expect(jsonEqual(copy, object)).toBe(true);
    for (const [own, theirs] of [
      [copy, original],
      [copy.metadata, original.metadata],
      [copy.metadata?.annotations, original.metadata?.annotations],
      [copy.metadata?.labels, original.metadata?.labels],
      [copy.spec, original.spec],
      [copy.spec.template, original.spec.template],
      [copy.spec.template.metadata, original.spec.template.metadata],
      [copy.spec.template.metadata.annotations, original.spec.template.metadata.annotations],
      [copy.spec.template.spec, original.spec.template.spec],
      [copy.spec.template.spec.initContainers, original.spec.template.spec.initContainers],
      [copy.spec.template.spec.initContainers?.[0], original.spec.template.spec.initContainers?.[0]],
      [copy.spec.template.spec.containers, original.spec.template.spec.containers],
      [copy.spec.template.spec.containers?.[0], original.spec.template.spec.containers?.[0]],
    ])
      expect(own).not.toBe(theirs);
    expect(copy.metadata?.finalizers).toBe(original.metadata?.finalizers);
    expect(copy.spec.template.spec.volumes).toBe(original.spec.template.spec.volumes);
    expect(copy.spec.template.spec.containers?.[0]?.command).toBe(original.spec.template.spec.containers?.[0]?.command);
  });

  it("copies a Pod's own spec as its pod spec", () => {
    const pod = { kind: 'Pod', spec: { containers: [{ name: 'c', args: ['x'] }] } } as KubeObject;
    const copy = cloneForRules(pod) as { spec: PodSpec };
    expect(copy.spec.containers?.[0]).not.toBe((pod.spec as PodSpec).containers?.[0]);
    expect(copy.spec.containers?.[0]?.args).toBe((pod.spec as PodSpec).containers?.[0]?.args);
  });

  it('keeps an own __proto__ key a plain key: the copy has Object.prototype and the key as data', () => {
    const parsed = JSON.parse('{"metadata":{"__proto__":{"polluted":true},"name":"x"}}') as KubeObject;
    const copy = cloneForRules(parsed) as { metadata: Record<string, unknown> };
    expect(Object.getPrototypeOf(copy.metadata)).toBe(Object.prototype);
    expect(Object.keys(copy.metadata)).toEqual(['__proto__', 'name']);
    expect(Object.getOwnPropertyDescriptor(copy.metadata, '__proto__')?.value).toEqual({ polluted: true });
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });
});

describe('jsonEqual', () => {
  it.each([
    [{ a: 1, b: [1, 2] }, { b: [1, 2], a: 1 }, true],
    [{ a: 1 }, { a: 1, b: undefined }, false],
    [{ a: [1, 2] }, { a: [2, 1] }, false],
    [[], {}, false],
    [{ a: null }, { a: {} }, false],
    [{ a: '1' }, { a: 1 }, false],
    [{ a: { b: { c: 'x' } } }, { a: { b: { c: 'x' } } }, true],
  ])('jsonEqual(%j, %j) is %s', (a, b, expected) => {
    expect(jsonEqual(a, b)).toBe(expected);
  });

  it('agrees with util.isDeepStrictEqual on JSON values, equal or not', () => {
    fc.assert(
      fc.property(fc.jsonValue(), fc.jsonValue(), (a, b) => {
        expect(jsonEqual(a, b)).toBe(isDeepStrictEqual(a, b));
        expect(jsonEqual(a, structuredClone(a))).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});
