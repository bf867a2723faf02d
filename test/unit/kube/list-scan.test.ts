// scanListPage (src/kube/list-scan.ts): the list's metadata and the marked items of a page, read from its bytes, must be
// exactly what JSON.parse of the whole page gives.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { scanListPage } from '../../../src/kube/list-scan.js';

const MARKER = '"deletionTimestamp"';
const scan = (text: string) => scanListPage(Buffer.from(text, 'utf8'), MARKER);

/** What the scan must agree with: the page parsed whole, and its items filtered by their own JSON text. */
function expected(text: string) {
  const page = JSON.parse(text) as { metadata?: Record<string, unknown>; items?: unknown[] | null };
  const items = page.items ?? [];
  return {
    metadata: page.metadata ?? {},
    items: items.filter((item) => JSON.stringify(item).includes(MARKER)),
    itemCount: items.length,
  };
}

const item = (name: string, deleting: boolean, extra: Record<string, unknown> = {}) => ({
  kind: 'PartialObjectMetadata',
  apiVersion: 'meta.k8s.io/v1',
  metadata: { name, namespace: 'apps', ...(deleting ? { deletionTimestamp: '2026-11-22T10:00:00Z' } : {}), ...extra },
});

describe('scanListPage', () => {
  it('reads the continue token and parses only the items being deleted, in order', () => {
    const text = JSON.stringify({
      kind: 'PartialObjectMetadataList',
      apiVersion: 'meta.k8s.io/v1',
      metadata: { resourceVersion: '42', continue: 'eyJvIjo1MDB9', remainingItemCount: 3 },
      items: [item('a', false), item('b', true), item('c', false), item('d', true)],
    });
    expect(scan(text)).toEqual({
      metadata: { resourceVersion: '42', continue: 'eyJvIjo1MDB9', remainingItemCount: 3 },
      items: [item('b', true), item('d', true)],
      itemCount: 4,
    });
  });

  it.each([
    ['braces, brackets and quotes inside strings', item('x', true, { annotations: { note: 'a } ] { [ \\" \\\\' } })],
    ['an escaped backslash before a closing quote', item('x', true, { annotations: { path: 'C:\\\\' } })],
    ['multi-byte UTF-8 text', item('x', true, { annotations: { who: 'Zoë 日本 🎉' } })],
    [
      'numbers, booleans and nulls as values',
      item('x', true, { generation: 12, a: true, b: false, c: null, d: -1.5e3 }),
    ],
  ])('steps over %s', (_name, object) => {
    const text = JSON.stringify({ metadata: {}, items: [item('before', false), object, item('after', true)] });
    expect(scan(text)).toEqual(expected(text));
  });

  it('reads the pages of a server that writes whitespace, another key order, and items as null', () => {
    const text = `{ "items" : [ ${JSON.stringify(item('a', true))} ,\n ${JSON.stringify(item('b', false))} ] ,\n "metadata" : { "continue" : "t" } , "kind" : "PodList" }`;
    expect(scan(text)).toEqual({ metadata: { continue: 't' }, items: [item('a', true)], itemCount: 2 });
    expect(scan('{"kind":"PartialObjectMetadataList","metadata":{"resourceVersion":"7"},"items":null}')).toEqual({
      metadata: { resourceVersion: '7' },
      items: [],
      itemCount: 0,
    });
  });

  it('parses an item with the marker anywhere, as a key of a map too (the caller judges the item itself)', () => {
    const lookalike = item('x', false, { annotations: { deletionTimestamp: 'not the real one' } });
    const quoted = item('y', false, { annotations: { note: 'a "deletionTimestamp" in a value is escaped: no match' } });
    expect(scan(JSON.stringify({ metadata: {}, items: [lookalike, quoted] })).items).toEqual([lookalike]);
  });

  it.each([
    ['an empty answer', ''],
    ['an array', '[]'],
    ['a cut-off page', '{"metadata":{},"items":[{"metadata":{"name":"a"}'],
    ['an unterminated string', '{"metadata":{"continue":"abc'],
    ['text after the list', '{"metadata":{}} x'],
    ['a missing value', '{"metadata":,"items":[]}'],
  ])('refuses %s', (_name, text) => {
    expect(() => scan(text)).toThrow(/^the list is not valid JSON: /);
  });

  it('agrees with JSON.parse on generated lists', () => {
    const metadata = fc.record(
      {
        name: fc.string(),
        deletionTimestamp: fc.constant('2026-11-22T10:00:00Z'),
        annotations: fc.dictionary(fc.string(), fc.string({ unit: 'binary' }), { maxKeys: 4 }),
        finalizers: fc.array(fc.string()),
        other: fc.jsonValue({ maxDepth: 2 }),
      },
      { requiredKeys: ['name'] },
    );
    const list = fc.record({
      kind: fc.constantFrom('PartialObjectMetadataList', 'JobList'),
      metadata: fc.record({ resourceVersion: fc.string(), continue: fc.string() }, { requiredKeys: [] }),
      items: fc.array(fc.record({ metadata }), { maxLength: 6 }),
    });
    fc.assert(
      fc.property(list, fc.boolean(), (page, pretty) => {
        const text = JSON.stringify(page, null, pretty ? 2 : undefined);
        expect(scan(text)).toEqual(expected(text));
      }),
    );
  });
});
