// Serving certificate reload without a restart. A Kubernetes Secret volume is updated by writing a new timestamped
// directory and renaming the `..data` symlink over the old one, so the file inodes we opened never change: watch the
// directories, and re-read the paths. A periodic re-read covers file systems whose events get lost.
import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Server as TlsServer } from 'node:tls';
import type { Logger } from 'pino';
import type { KeyPair } from './certificates.js';
import { CertificateSwitcher, coalesced, type CertificateObserver } from './switcher.js';

export interface CertificateWatchOptions extends CertificateObserver {
  /** The server whose secure context is switched; open connections keep the context they started with. */
  server: TlsServer;
  certFile: string;
  keyFile: string;
  /** The pair in use now. */
  current: KeyPair;
  intervalMs: number;
  logger: Logger;
}

export interface CertificateWatch {
  /** Re-read the files now; resolves once any switch is done. */
  check(): Promise<void>;
  close(): void;
}

// A kubelet update is a burst of events (new dir, symlink swap, old dir removed): read once it has settled.
const DEBOUNCE_MS = 200;

export function watchCertificates(options: CertificateWatchOptions): CertificateWatch {
  const { certFile, keyFile, logger } = options;
  const switcher = new CertificateSwitcher({ certFile, keyFile }, logger, options.current);
  switcher.serveWith(options.server, options);
  let debounce: NodeJS.Timeout | undefined;

  const check = coalesced(async () => {
    let pair: KeyPair;
    try {
      const [cert, key] = await Promise.all([readFile(certFile, 'utf8'), readFile(keyFile, 'utf8')]);
      pair = { cert, key };
    } catch (error) {
      switcher.refuse(error as Error, 'unreadable');
      return;
    }
    switcher.offer(pair);
  });

  const schedule = () => {
    clearTimeout(debounce);
    debounce = setTimeout(() => void check().catch(() => undefined), DEBOUNCE_MS);
    debounce.unref();
  };
  const watchers: FSWatcher[] = [];
  for (const directory of new Set([dirname(certFile), dirname(keyFile)])) {
    const cannotWatch = (error: unknown) =>
      logger.warn({ directory, err: error }, 'cannot watch the certificate directory; relying on the periodic re-read');
    try {
      const watcher = watch(directory, { persistent: false }, schedule);
      watcher.on('error', cannotWatch);
      watchers.push(watcher);
    } catch (error) {
      cannotWatch(error);
    }
  }
  const interval = setInterval(() => void check().catch(() => undefined), options.intervalMs);
  interval.unref();

  return {
    check,
    close() {
      clearTimeout(debounce);
      clearInterval(interval);
      for (const watcher of watchers) watcher.close();
    },
  };
}
