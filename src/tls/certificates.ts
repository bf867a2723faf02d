import { constants, createPrivateKey, X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createSecureContext, type SecureContextOptions, type Server as TlsServer } from 'node:tls';
import selfsigned from 'selfsigned';
import type { Config } from '../config/keys.js';
import { ConfigError } from '../errors.js';

/** A PEM certificate and its private key. */
export interface KeyPair {
  key: string;
  cert: string;
}

export interface TlsMaterial extends KeyPair {
  /** True when no files were configured and a development certificate was made at start. */
  generated: boolean;
}

type Extensions = NonNullable<Parameters<typeof selfsigned.generate>[1]>['extensions'];

/**
 * The one place certificates are made: ECDSA P-256 signed with SHA-256, for `commonName`, valid from `notBefore` to
 * `notAfter`; self-signed, or signed by `ca` when given.
 */
export async function issueCertificate(
  commonName: string,
  options: { notBefore: Date; notAfter: Date; extensions: Extensions; ca?: KeyPair },
): Promise<KeyPair> {
  const pems = await selfsigned.generate([{ name: 'commonName', value: commonName }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    notBeforeDate: options.notBefore,
    notAfterDate: options.notAfter,
    extensions: options.extensions,
    ...(options.ca ? { ca: options.ca } : {}),
  });
  return { cert: pems.cert, key: pems.private };
}

/** A short-lived self-signed certificate for local development, valid for localhost and the loopback addresses. */
export async function generateDevCertificate(): Promise<TlsMaterial> {
  const notBefore = new Date();
  const pair = await issueCertificate('hookguard-dev', {
    notBefore,
    notAfter: new Date(notBefore.getTime() + 30 * 24 * 3600 * 1000),
    extensions: [
      { name: 'basicConstraints', cA: false },
      { name: 'keyUsage', digitalSignature: true, keyEncipherment: true },
      { name: 'extKeyUsage', serverAuth: true },
      {
        name: 'subjectAltName',
        altNames: [
          { type: 2, value: 'localhost' },
          { type: 7, ip: '127.0.0.1' },
          { type: 7, ip: '::1' },
        ],
      },
    ],
  });
  return { ...pair, generated: true };
}

export async function loadTls(tls: Config['server']['tls']): Promise<TlsMaterial> {
  if (tls.certFile === null || tls.keyFile === null) return generateDevCertificate();
  const cert = await readPem(tls.certFile, 'server.tls.certFile');
  const key = await readPem(tls.keyFile, 'server.tls.keyFile');
  try {
    assertUsablePair({ cert, key });
  } catch (error) {
    throw new ConfigError(
      'server.tls',
      `${tls.certFile} and ${tls.keyFile} are not a usable certificate and key: ${(error as Error).message}`,
    );
  }
  return { key, cert, generated: false };
}

async function readPem(file: string, key: string): Promise<string> {
  try {
    return await readFile(file, 'utf8');
  } catch (error) {
    throw new ConfigError(key, `cannot read ${file}: ${(error as Error).message}`);
  }
}

/** Throws unless `cert` and `key` are a certificate and its private key (empty files included: OpenSSL lets those pass). */
export function assertUsablePair(pair: KeyPair): void {
  new X509Certificate(pair.cert);
  createPrivateKey(pair.key);
  createSecureContext(pair);
}

/**
 * TLS 1.2 suites: ECDHE key exchange (forward secrecy) with an AEAD cipher (AES-GCM, ChaCha20-Poly1305) only, no CBC
 * and no SHA-1 MAC: Mozilla's "intermediate" TLS 1.2 list without its finite-field DHE suites. Any client the API
 * server runs on (Go's crypto/tls) offers these first. TLS 1.3's three suites are all AEAD with forward secrecy.
 */
export const TLS_CIPHERS = [
  'TLS_AES_128_GCM_SHA256',
  'TLS_AES_256_GCM_SHA384',
  'TLS_CHACHA20_POLY1305_SHA256',
  'ECDHE-ECDSA-AES128-GCM-SHA256',
  'ECDHE-RSA-AES128-GCM-SHA256',
  'ECDHE-ECDSA-AES256-GCM-SHA384',
  'ECDHE-RSA-AES256-GCM-SHA384',
  'ECDHE-ECDSA-CHACHA20-POLY1305',
  'ECDHE-RSA-CHACHA20-POLY1305',
].join(':');

/** Handshake signatures without SHA-1 (nor SHA-224): a client that can only sign with those is refused. */
const SIGNATURE_ALGORITHMS = [
  'ecdsa_secp256r1_sha256',
  'ecdsa_secp384r1_sha384',
  'ecdsa_secp521r1_sha512',
  'ed25519',
  'rsa_pss_rsae_sha256',
  'rsa_pss_rsae_sha384',
  'rsa_pss_rsae_sha512',
  'rsa_pkcs1_sha256',
  'rsa_pkcs1_sha384',
  'rsa_pkcs1_sha512',
].join(':');

/** What the HTTPS server is given, at start and at every certificate reload. */
export function secureContextOptions(pair: KeyPair): SecureContextOptions {
  return {
    key: pair.key,
    cert: pair.cert,
    minVersion: 'TLSv1.2',
    ciphers: TLS_CIPHERS,
    sigalgs: SIGNATURE_ALGORITHMS,
    honorCipherOrder: true,
    // A client-initiated renegotiation (TLS 1.2) is refused outright, not merely rate-limited as Node does.
    secureOptions: constants.SSL_OP_NO_RENEGOTIATION,
  };
}

/** Switches `server` to `pair`: connections already open keep the certificate they started with. */
export function useCertificate(server: TlsServer, pair: KeyPair): void {
  server.setSecureContext(secureContextOptions(pair));
}
