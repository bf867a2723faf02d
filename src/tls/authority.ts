// The certificates hookguard manages itself (certificates.mode: self), after open-policy-agent/cert-controller
// v0.16.0 pkg/rotator/rotator.go (its own code, not a copy): a CA whose key is kept in the Secret to re-sign serving
// certificates, and a serving certificate for the Service's DNS names. What differs: the CA is rotated in two
// steps (the new CA reaches every caBundle before anything it signed is served) and an old CA stays in the bundle
// until it expires, so no rotation leaves the API server distrusting a certificate a replica still serves.
import { createPrivateKey, randomBytes, X509Certificate } from 'node:crypto';
import selfsigned from 'selfsigned';

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
const PEM_CERTIFICATE = /-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g;

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

/** The certificates of a PEM bundle that parse, in order; garbage between or instead of them is skipped. */
export function bundleCertificates(bundle: string | undefined): X509Certificate[] {
  const parsed: X509Certificate[] = [];
  for (const pem of bundle?.match(PEM_CERTIFICATE) ?? []) {
    try {
      parsed.push(new X509Certificate(pem));
    } catch {
      // not a certificate: left out
    }
  }
  return parsed;
}

/** True once less than a third of the certificate's validity is left (or it is not valid yet, or expired). */
export function dueForRotation(certificate: X509Certificate, nowMs: number): boolean {
  const from = Date.parse(certificate.validFrom);
  const to = Date.parse(certificate.validTo);
  return nowMs < from || to - nowMs < (to - from) / 3;
}

export async function issueCa(settings: AuthoritySettings, nowMs: number): Promise<{ cert: string; key: string }> {
  // A name of its own: OpenSSL finds a certificate's issuer in a bundle by name, and two CAs made within the same
  // second (a broken one replaced at once) would otherwise share one.
  const name = `hookguard-ca@${Math.floor(nowMs / 1000)}-${randomBytes(4).toString('hex')}`;
  const pems = await selfsigned.generate([{ name: 'commonName', value: name }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    notBeforeDate: new Date(nowMs - BACKDATE_MS),
    notAfterDate: new Date(nowMs + settings.caValidityDays * DAY_MS),
    extensions: [
      { name: 'basicConstraints', cA: true, critical: true },
      { name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true },
    ],
  });
  return { cert: pemBundle([pems.cert]), key: pems.private };
}

export async function issueServingCertificate(
  settings: AuthoritySettings,
  ca: { cert: string; key: string },
  nowMs: number,
): Promise<{ cert: string; key: string }> {
  const [name = ''] = serviceDnsNames(settings);
  const pems = await selfsigned.generate([{ name: 'commonName', value: name }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    notBeforeDate: new Date(nowMs - BACKDATE_MS),
    notAfterDate: new Date(nowMs + settings.certValidityDays * DAY_MS),
    ca,
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true },
      { name: 'extKeyUsage', serverAuth: true },
      { name: 'subjectAltName', altNames: serviceDnsNames(settings).map((value) => ({ type: 2, value })) },
    ],
  });
  return { cert: pemBundle([pems.cert]), key: pems.private };
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
 * Why the serving pair in `data` cannot be served (undefined: a certificate and its key, signed by the bundle's
 * first CA, for the Service's names, not expired).
 */
export function servingProblem(
  data: CertificateData,
  settings: Pick<AuthoritySettings, 'serviceName' | 'namespace'>,
  nowMs: number,
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
  const [ca] = bundleCertificates(data[SECRET_KEYS.caBundle]);
  if (ca === undefined || !cert.checkIssued(ca) || !cert.verify(ca.publicKey))
    return `${SECRET_KEYS.cert} is not signed by the current CA`;
  for (const name of serviceDnsNames(settings))
    if (cert.checkHost(name) === undefined) return `${SECRET_KEYS.cert} is not valid for ${name}`;
  if (Date.parse(cert.validTo) <= nowMs) return `${SECRET_KEYS.cert} expired on ${cert.validTo}`;
  return undefined;
}

/** The bundle's certificates that are CAs and not expired, as PEM, in order. */
export function validCas(bundle: string | undefined, nowMs: number): string[] {
  return bundleCertificates(bundle)
    .filter((certificate) => certificate.ca && Date.parse(certificate.validTo) > nowMs)
    .map((certificate) => certificate.toString());
}
