// Which CAs hookguard made, recorded where only hookguard writes: an annotation on its Mutating- and
// ValidatingWebhookConfiguration, written in the same JSON patch as their caBundles. Cluster-scoped objects a tenant
// cannot write, unlike the Secret (issue 25: a CA appended to ca.crt was trusted by both caBundles within 3 s). A CA
// is known by the SHA-256 of its public key, so a re-encoded PEM is still the same CA and a forged one with the same
// name is not.
import type { X509Certificate } from 'node:crypto';
import { isValidCa, signedBy, spkiHash } from './authority.js';
import { bundleCertificates } from './pem.js';

/** The annotation holding the record, on both webhook configurations. */
export const TRUST_ANNOTATION = 'hookguard.io/certificate-authorities';

/** The most of the annotation that is read: a record names a handful of CAs. */
const MAX_RECORD_CHARS = 16 * 1024;

export interface TrustRecord {
  /** The SPKI hashes of the CAs hookguard made that are still trusted. */
  readonly cas: ReadonlySet<string>;
  /**
   * Of those, the CAs of a chain whose Secret was deleted: trusted only until the new chain's serving certificate
   * is served by every replica.
   */
  readonly retiring: ReadonlySet<string>;
}

/** The record in `annotation`; undefined when there is none (or it is not one hookguard wrote). */
export function parseTrustRecord(annotation: string | undefined): TrustRecord | undefined {
  if (annotation === undefined || annotation.length > MAX_RECORD_CHARS) return undefined;
  try {
    const value = JSON.parse(annotation) as { cas?: unknown; retiring?: unknown };
    const hashes = (list: unknown) =>
      new Set(Array.isArray(list) ? list.filter((item): item is string => typeof item === 'string') : []);
    if (!Array.isArray(value.cas)) return undefined;
    return { cas: hashes(value.cas), retiring: hashes(value.retiring) };
  } catch {
    return undefined;
  }
}

/** The annotation's value for the CAs of a bundle, in its order, `retiring` marking those of a deleted chain. */
export function renderTrustRecord(cas: readonly X509Certificate[], retiring: ReadonlySet<string>): string {
  const hashes = cas.map(spkiHash);
  return JSON.stringify({ cas: hashes, retiring: hashes.filter((hash) => retiring.has(hash)) });
}

/** Each certificate once, first seen first. */
export function uniqueCas(cas: readonly X509Certificate[]): X509Certificate[] {
  const seen = new Set<string>();
  return cas.filter((ca) => !seen.has(ca.fingerprint256) && seen.add(ca.fingerprint256));
}

/** The CAs of `bundles` (PEM, one per webhook; undefined where a webhook has none), first seen first, each once. */
export function casInAnyBundle(bundles: readonly (string | undefined)[]): X509Certificate[] {
  return uniqueCas(bundles.flatMap((bundle) => bundleCertificates(bundle)));
}

/** The CAs every one of `bundles` holds: what the API server trusts for every webhook. None when there is no bundle. */
export function casInEveryBundle(bundles: readonly (string | undefined)[]): X509Certificate[] {
  const each = bundles.map((bundle) => new Set(bundleCertificates(bundle).map((ca) => ca.fingerprint256)));
  return casInAnyBundle(bundles).filter((ca) => each.length > 0 && each.every((held) => held.has(ca.fingerprint256)));
}

/**
 * Why the API server would not trust `cert` (PEM) for every webhook of `bundles` (undefined: it would): hookguard's
 * serving certificates are signed by the CA itself, so it must be signed by a valid CA every caBundle holds.
 */
export function untrustedBecause(
  cert: string,
  bundles: readonly (string | undefined)[],
  nowMs: number,
): string | undefined {
  const [leaf] = bundleCertificates(cert);
  if (leaf === undefined) return 'tls.crt holds no certificate';
  if (bundles.length === 0) return 'no webhook configuration holds a caBundle to check tls.crt against';
  const trusted = casInEveryBundle(bundles).filter((ca) => isValidCa(ca, nowMs));
  if (trusted.some((ca) => signedBy(leaf, ca))) return undefined;
  return `tls.crt is signed by no CA that every webhook's caBundle holds (issuer ${leaf.issuer.replace(/\n/g, ', ')})`;
}
