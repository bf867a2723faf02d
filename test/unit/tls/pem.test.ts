// Reading PEM certificates from hostile text (src/tls/pem.ts, issue 25 finding 4): in order, junk skipped, at most
// MAX_PEM_BYTES read, and in work linear in the text, counted rather than timed.
import { beforeAll, describe, expect, it, vi } from 'vitest';
import { issueCa, pemBundle } from '../../../src/tls/authority.js';
import { bundleCertificates, MAX_PEM_BYTES, pemCertificateBlocks } from '../../../src/tls/pem.js';

const SETTINGS = { serviceName: 'hookguard', namespace: 'demo', caValidityDays: 1825, certValidityDays: 365 };
const NOW = Date.parse('2026-11-25T12:00:00Z');
const BEGIN = '-----BEGIN CERTIFICATE-----';

let first: string;
let second: string;

beforeAll(async () => {
  [first, second] = (await Promise.all([issueCa(SETTINGS, NOW), issueCa(SETTINGS, NOW)])).map((ca) => ca.cert) as [
    string,
    string,
  ];
});

const fingerprints = (bundle: string) => bundleCertificates(bundle).map((certificate) => certificate.fingerprint256);
const fingerprintOf = (pem: string) => fingerprints(pem)[0];

describe('bundleCertificates', () => {
  it('finds every certificate in order, with CRLF lines and junk around and between them', () => {
    const bundle = `junk\n${first}${BEGIN}\nnot base64\n-----END CERTIFICATE-----\n${BEGIN}\n${second.replace(/\n/g, '\r\n')}trailing`;
    expect(fingerprints(bundle)).toEqual([fingerprintOf(first), fingerprintOf(second)]);
  });

  it('a BEGIN inside a block starts it again, as Go encoding/pem does', () => {
    expect(fingerprints(`${BEGIN}\n${BEGIN}\n${first}`)).toEqual([fingerprintOf(first)]);
    expect(pemCertificateBlocks(`${BEGIN}\nAAAA\n${first}`)).toEqual([first.trim()]);
  });

  it('reads no further than MAX_PEM_BYTES: a certificate after that much junk is not read', () => {
    const junk = `${'x'.repeat(MAX_PEM_BYTES)}\n`;
    expect(fingerprints(`${first}${junk}${second}`)).toEqual([fingerprintOf(first)]);
  });

  it('512 KiB of BEGIN lines and no END: no certificate', () => {
    expect(bundleCertificates(`${BEGIN}\n`.repeat((512 * 1024) / 28))).toEqual([]);
  });
});

describe('work linear in the text (issue 25: a lazy regular expression took 570 ms at 256 KiB)', () => {
  // Counted, not timed: the characters indexOf scans and slice copies while the blocks are found.
  function charactersTouched(text: string): number {
    let touched = 0;
    const { indexOf, slice } = String.prototype;
    const scans = vi.spyOn(String.prototype, 'indexOf').mockImplementation(function (this: string, search, from) {
      const found = indexOf.call(this, search, from);
      touched += (found === -1 ? this.length : found) - (from ?? 0);
      return found;
    });
    const copies = vi.spyOn(String.prototype, 'slice').mockImplementation(function (this: string, ...range) {
      const piece = slice.apply(this, range);
      touched += piece.length;
      return piece;
    });
    try {
      pemCertificateBlocks(text);
    } finally {
      scans.mockRestore();
      copies.mockRestore();
    }
    return touched;
  }

  it.each([
    ['BEGIN lines without an END', (count: number) => `${BEGIN}\n`.repeat(count)],
    ['certificates', (count: number) => pemBundle(Array.from({ length: count / 16 }, () => first))],
    ['one long line', (count: number) => 'A'.repeat(count * 28)],
  ])('%s: each character touched at most 3 times, 8x the text 8x the work', (_what, text) => {
    const small = text(1024);
    const large = text(8 * 1024);
    const [smallWork, largeWork] = [charactersTouched(small), charactersTouched(large)];
    expect(smallWork).toBeGreaterThanOrEqual(small.length);
    expect(largeWork).toBeLessThanOrEqual(3 * large.length);
    expect(largeWork / smallWork).toBeLessThanOrEqual(8.5);
  });
});
