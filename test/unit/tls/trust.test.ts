// The record of the CAs hookguard made (src/tls/trust.ts): what it writes, and what it takes for a record.
import { X509Certificate } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { issueCa, spkiHash } from '../../../src/tls/authority.js';
import { parseTrustRecord, renderTrustRecord } from '../../../src/tls/trust.js';

const SETTINGS = { serviceName: 'hookguard', namespace: 'demo', caValidityDays: 1825, certValidityDays: 365 };
let cas: X509Certificate[];

beforeAll(async () => {
  const now = Date.parse('2026-11-25T12:00:00Z');
  cas = (await Promise.all([issueCa(SETTINGS, now), issueCa(SETTINGS, now)])).map((ca) => new X509Certificate(ca.cert));
});

describe('the trust record', () => {
  it('names each CA of the bundle by SPKI hash, in order, and marks the retiring ones; it reads back the same', () => {
    const [current, old] = cas as [X509Certificate, X509Certificate];
    const value = renderTrustRecord([current, old], new Set([spkiHash(old)]));
    expect(value).toBe(JSON.stringify({ cas: [spkiHash(current), spkiHash(old)], retiring: [spkiHash(old)] }));
    expect(parseTrustRecord(value)).toEqual({
      cas: new Set([spkiHash(current), spkiHash(old)]),
      retiring: new Set([spkiHash(old)]),
    });
  });

  it.each([
    ['no annotation', undefined],
    ['not JSON', 'hookguard'],
    ['no list of CAs', '{"retiring":[]}'],
    ['larger than a record can be', JSON.stringify({ cas: ['x'.repeat(20_000)] })],
  ])('%s: no record', (_what, annotation) => {
    expect(parseTrustRecord(annotation)).toBeUndefined();
  });

  it('entries that are not strings are left out', () => {
    expect(parseTrustRecord('{"cas":["a",1,null],"retiring":{}}')).toEqual({
      cas: new Set(['a']),
      retiring: new Set(),
    });
  });
});
