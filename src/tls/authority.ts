// The certificates hookguard manages itself (certificates.mode: self), after open-policy-agent/cert-controller
// v0.16.0 pkg/rotator/rotator.go (its own code, not a copy): a CA whose key is kept in the Secret to re-sign serving
// certificates, and a serving certificate for the Service's DNS names. What differs: the CA is rotated in two
// steps (the new CA reaches every caBundle before anything it signed is served) and an old CA stays in the bundle
// until it expires, so no rotation leaves the API server distrusting a certificate a replica still serves.
import { createHash, createPrivateKey, randomBytes, X509Certificate } from 'node:crypto';
import { issueCertificate, type KeyPair } from './certificates.js';
import { bundleCertificates } from './pem.js';

/** The Secret's keys: kubernetes.io/tls's two, the CA bundle, and the key of the bundle's first (current) CA. */
export const SECRET_KEYS = { cert: 'tls.crt', key: 'tls.key', caBundle: 'ca.crt', caKey: 'ca.key' } as const;

/** The Secret's data, decoded; a key may be missing. */
export type CertificateData = Partial<Record<(typeof SECRET_KEYS)[keyof typeof SECRET_KEYS], string>>;

export interface AuthoritySettings {
  serviceName: string;
  namespace: string;
  caValidityDays: number;
  certValidityDays: number;
}

const DAY_MS = 24 * 3600 * 1000;
/** Certificates start an hour in the past, for clocks a little behind ours (cert-controller does the same). */
const BACKDATE_MS = 3600 * 1000;

/**
 * PEM certificates as one bundle, each ending in a newline: selfsigned's PEM has none after its END line, and
 * concatenated like that, neither OpenSSL nor Go's encoding/pem (which looks for "\n-----BEGIN") finds the second.
 */
export function pemBundle(certificates: readonly string[]): string {
  return certificates.map((pem) => `${pem.trim()}\n`).join('');
}

/** The names the API server checks: `<service>.<namespace>.svc` (what it dials) and the cluster-local FQDN. */
export function serviceDnsNames(settings: Pick<AuthoritySettings, 'serviceName' | 'namespace'>): string[] {
  const name = `${settings.serviceName}.${settings.namespace}.svc`;
  return [name, `${name}.cluster.local`];
}

/** True once less than a third of the certificate's validity is left (or it is not valid yet, or expired). */
export function dueForRotation(certificate: X509Certificate, nowMs: number): boolean {
  const from = Date.parse(certificate.validFrom);
  const to = Date.parse(certificate.validTo);
  return nowMs < from || to - nowMs < (to - from) / 3;
}

export async function issueCa(settings: AuthoritySettings, nowMs: number): Promise<KeyPair> {
  // A name of its own: OpenSSL finds a certificate's issuer in a bundle by name, and two CAs made within the same
  // second (a broken one replaced at once) would otherwise share one.
  const name = `hookguard-ca@${Math.floor(nowMs / 1000)}-${randomBytes(4).toString('hex')}`;
  const pair = await issueCertificate(name, {
    notBefore: new Date(nowMs - BACKDATE_MS),
    notAfter: new Date(nowMs + settings.caValidityDays * DAY_MS),
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    ],
  });
  return { cert: pemBundle([pair.cert]), key: pair.key };
}

export async function issueServingCertificate(
  settings: AuthoritySettings,
  ca: KeyPair,
  nowMs: number,
): Promise<KeyPair> {
  const [name = ''] = serviceDnsNames(settings);
  const pair = await issueCertificate(name, {
    notBefore: new Date(nowMs - BACKDATE_MS),
    notAfter: new Date(nowMs + settings.certValidityDays * DAY_MS),
    ca,
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: serviceDnsNames(settings).map((value) => ({ type: 2, value })) },
    ],
  });
  return { cert: pemBundle([pair.cert]), key: pair.key };
}

/** When a certificate hookguard issued was made: it is backdated by an hour. */
export function issuedAt(certificate: X509Certificate): number {
  return Date.parse(certificate.validFrom) + BACKDATE_MS;
}

/** A CA's identity that survives re-encoding: the SHA-256 of its public key (SubjectPublicKeyInfo, DER), base64. */
export function spkiHash(certificate: X509Certificate): string {
  return createHash('sha256')
    .update(certificate.publicKey.export({ type: 'spki', format: 'der' }))
    .digest('base64');
}

/** A certificate that can sign others and has not expired. */
export function isValidCa(certificate: X509Certificate, nowMs: number): boolean {
  return certificate.ca && Date.parse(certificate.validTo) > nowMs;
}

/** True when `certificate` was signed by `ca`. */
export function signedBy(certificate: X509Certificate, ca: X509Certificate): boolean {
  return certificate.checkIssued(ca) && certificate.verify(ca.publicKey);
}

/** Why the CA in `data` cannot sign (undefined: the bundle's first certificate is a CA and ca.key is its key). */
export function caProblem(data: CertificateData, nowMs: number): string | undefined {
  const [current] = bundleCertificates(data[SECRET_KEYS.caBundle]);
  if (current === undefined) return `${SECRET_KEYS.caBundle} holds no certificate`;
  if (!current.ca) return `the first certificate of ${SECRET_KEYS.caBundle} is not a CA`;
  if (Date.parse(current.validTo) <= nowMs) return `the CA expired on ${current.validTo}`;
  try {
    if (!current.checkPrivateKey(createPrivateKey(data[SECRET_KEYS.caKey] ?? '')))
      return `${SECRET_KEYS.caKey} is not the key of the CA`;
  } catch {
    return `${SECRET_KEYS.caKey} is not a private key`;
  }
  return undefined;
}

/**
 * Why the serving pair in `data` cannot be served (undefined: a certificate and its key, signed by one of
 * `trustedCas`, for the Service's names, not expired). `trustedCas` are the CAs the caBundles hold now, not the
 * Secret's: a pair is judged by whether the API server trusts it.
 */
export function servingProblem(
  data: CertificateData,
  settings: Pick<AuthoritySettings, 'serviceName' | 'namespace'>,
  nowMs: number,
  trustedCas: readonly X509Certificate[],
): string | undefined {
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(data[SECRET_KEYS.cert] ?? '');
  } catch {
    return `${SECRET_KEYS.cert} is not a certificate`;
  }
  try {
    if (!cert.checkPrivateKey(createPrivateKey(data[SECRET_KEYS.key] ?? '')))
      return `${SECRET_KEYS.key} is not the key of ${SECRET_KEYS.cert}`;
  } catch {
    return `${SECRET_KEYS.key} is not a private key`;
  }
  if (!trustedCas.some((ca) => signedBy(cert, ca)))
    return `${SECRET_KEYS.cert} is not signed by a CA every caBundle trusts`;
  for (const name of serviceDnsNames(settings))
    if (cert.checkHost(name) === undefined) return `${SECRET_KEYS.cert} is not valid for ${name}`;
  if (Date.parse(cert.validTo) <= nowMs) return `${SECRET_KEYS.cert} expired on ${cert.validTo}`;
  return undefined;
}
