// What makes a self-managed CA or serving certificate unusable or due, as tables (src/tls/authority.ts).
import { createHash, createPublicKey, X509Certificate } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import {
  caProblem,
  dueForRotation,
  isValidCa,
  issueCa,
  issuedAt,
  issueServingCertificate,
  pemBundle,
  servingProblem,
  spkiHash,
  type CertificateData,
} from '../../../src/tls/authority.js';
import { bundleCertificates } from '../../../src/tls/pem.js';

const SETTINGS = { serviceName: 'hookguard', namespace: 'demo', caValidityDays: 1825, certValidityDays: 365 };
const DAY_MS = 24 * 3600 * 1000;
const NOW = Date.parse('2026-11-25T12:00:00Z');

let ca: { cert: string; key: string };
let otherCa: { cert: string; key: string };
let serving: { cert: string; key: string };
let good: CertificateData;

beforeAll(async () => {
  ca = await issueCa(SETTINGS, NOW);
  otherCa = await issueCa(SETTINGS, NOW);
  serving = await issueServingCertificate(SETTINGS, ca, NOW);
  good = { 'tls.crt': serving.cert, 'tls.key': serving.key, 'ca.crt': ca.cert, 'ca.key': ca.key };
});

describe('issued certificates', () => {
  it('a CA and a serving certificate for <service>.<namespace>.svc and .svc.cluster.local, from an hour ago', () => {
    const caCert = new X509Certificate(ca.cert);
    const cert = new X509Certificate(serving.cert);
    expect([caCert.ca, cert.ca, cert.checkIssued(caCert), cert.verify(caCert.publicKey)]).toEqual([
      true,
      false,
      true,
      true,
    ]);
    expect(cert.subjectAltName).toBe('DNS:hookguard.demo.svc, DNS:hookguard.demo.svc.cluster.local');
    expect(Date.parse(cert.validFrom)).toBe(NOW - 3600 * 1000);
    expect(Date.parse(cert.validTo)).toBe(NOW + 365 * DAY_MS);
    expect(Date.parse(caCert.validTo)).toBe(NOW + 1825 * DAY_MS);
    // Two CAs made at once have names of their own.
    expect(caCert.subject).not.toBe(new X509Certificate(otherCa.cert).subject);
  });

  it('PEMs end in a newline, so that a bundle of them holds every certificate', () => {
    expect(ca.cert.endsWith('-----END CERTIFICATE-----\n')).toBe(true);
    expect(bundleCertificates(pemBundle([ca.cert, otherCa.cert]))).toHaveLength(2);
    expect(pemBundle(['a\n', '  b  '])).toBe('a\nb\n');
  });
});

describe('dueForRotation: less than a third of the validity left', () => {
  it.each([
    ['just issued', 0, false],
    ['8 months in (4 left of 12)', 240, false],
    ['9 months in (3 left)', 250, true],
    ['expired', 400, true],
    ['not valid yet', -1, true],
  ])('%s', (_what, days, due) => {
    expect(dueForRotation(new X509Certificate(serving.cert), NOW + days * DAY_MS)).toBe(due);
  });
});

describe('caProblem', () => {
  it.each([
    ['a good CA', {}, undefined],
    ['garbage ca.crt', { 'ca.crt': 'garbage' }, 'ca.crt holds no certificate'],
    ['a serving certificate first', { 'ca.crt': 'SERVING' }, 'the first certificate of ca.crt is not a CA'],
    ["another CA's key", { 'ca.key': 'OTHER_KEY' }, 'ca.key is not the key of the CA'],
    ['no ca.key', { 'ca.key': undefined }, 'ca.key is not a private key'],
  ] as const)('%s: %s', (_what, change, problem) => {
    const data = Object.fromEntries(
      Object.entries({ ...good, ...change }).map(([key, value]) => [
        key,
        value === 'SERVING' ? serving.cert : value === 'OTHER_KEY' ? otherCa.key : value,
      ]),
    ) as CertificateData;
    expect(caProblem(data, NOW)).toBe(problem);
  });

  it('an expired CA', () => {
    expect(caProblem(good, NOW + 1826 * DAY_MS)).toMatch(/^the CA expired on /);
  });
});

describe('servingProblem', () => {
  it.each([
    ['a good pair', {}, undefined],
    ['garbage tls.crt', { 'tls.crt': 'garbage' }, 'tls.crt is not a certificate'],
    ["the CA's key as tls.key", { 'tls.key': 'CA_KEY' }, 'tls.key is not the key of tls.crt'],
    ['garbage tls.key', { 'tls.key': 'garbage' }, 'tls.key is not a private key'],
  ] as const)('%s: %s', (_what, change, problem) => {
    const data = Object.fromEntries(
      Object.entries({ ...good, ...change }).map(([key, value]) => [key, value === 'CA_KEY' ? ca.key : value]),
    ) as CertificateData;
    expect(servingProblem(data, SETTINGS, NOW, [new X509Certificate(ca.cert)])).toBe(problem);
  });

  it('judged against the CAs the caBundles hold, not the Secret: signed by none of them is a problem', () => {
    // ca.crt names the signing CA first, but the caBundles trust only another one (issue 25, finding 11).
    expect(servingProblem(good, SETTINGS, NOW, [new X509Certificate(otherCa.cert)])).toBe(
      'tls.crt is not signed by a CA every caBundle trusts',
    );
    expect(servingProblem(good, SETTINGS, NOW, [])).toBe('tls.crt is not signed by a CA every caBundle trusts');
    const both = [new X509Certificate(otherCa.cert), new X509Certificate(ca.cert)];
    expect(servingProblem({ ...good, 'ca.crt': 'garbage' }, SETTINGS, NOW, both)).toBeUndefined();
  });

  it('another Service name, and expiry', () => {
    const trusted = [new X509Certificate(ca.cert)];
    expect(servingProblem(good, { ...SETTINGS, serviceName: 'webhook' }, NOW, trusted)).toBe(
      'tls.crt is not valid for webhook.demo.svc',
    );
    expect(servingProblem(good, SETTINGS, NOW + 366 * DAY_MS, trusted)).toMatch(/^tls\.crt expired on /);
  });
});

describe('what identifies a CA', () => {
  it('isValidCa: a CA not expired; a serving certificate is none', async () => {
    const shortLived = new X509Certificate((await issueCa({ ...SETTINGS, caValidityDays: 2 }, NOW)).cert);
    expect([isValidCa(shortLived, NOW), isValidCa(shortLived, NOW + 3 * DAY_MS)]).toEqual([true, false]);
    expect(isValidCa(new X509Certificate(serving.cert), NOW)).toBe(false);
  });

  it('spkiHash: the SHA-256 of the public key, the same for the same key, another for another CA', () => {
    const caCert = new X509Certificate(ca.cert);
    // Worked out from the CA's private key alone, never from its certificate: a hash of anything else in the
    // certificate (its DER, serial or dates) differs.
    const ofKey = (pem: string) =>
      createHash('sha256')
        .update(createPublicKey(pem).export({ type: 'spki', format: 'der' }))
        .digest('base64');
    expect(spkiHash(caCert)).toBe(ofKey(ca.key));
    expect(spkiHash(new X509Certificate(otherCa.cert))).toBe(ofKey(otherCa.key));
    expect(spkiHash(new X509Certificate(otherCa.cert))).not.toBe(spkiHash(caCert));
  });

  it('issuedAt: when hookguard made it (certificates start an hour back)', () => {
    expect(issuedAt(new X509Certificate(serving.cert))).toBe(NOW);
  });
});
