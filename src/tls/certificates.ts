import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { createSecureContext, type SecureContextOptions } from 'node:tls';
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

/** A short-lived self-signed certificate for local development, valid for localhost and the loopback addresses. */
export async function generateDevCertificate(): Promise<TlsMaterial> {
  const notBeforeDate = new Date();
  const notAfterDate = new Date(notBeforeDate.getTime() + 30 * 24 * 3600 * 1000);
  const pems = await selfsigned.generate([{ name: 'commonName', value: 'hookguard-dev' }], {
    keyType: 'ec',
    curve: 'P-256',
    algorithm: 'sha256',
    notBeforeDate,
    notAfterDate,
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
  return { key: pems.private, cert: pems.cert, generated: true };
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

/** What the HTTPS server is given, at start and at every certificate reload. */
export function secureContextOptions(pair: KeyPair): SecureContextOptions {
  return { key: pair.key, cert: pair.cert, minVersion: 'TLSv1.2' };
}
