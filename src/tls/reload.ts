// Serving certificate reload without a restart. A Kubernetes Secret volume is updated by writing a new timestamped
// directory and renaming the `..data` symlink over the old one, so the file inodes we opened never change: watch the
// directories, and re-read the paths. A periodic re-read covers file systems whose events get lost.
import { watch, type FSWatcher } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import type { Server as TlsServer } from 'node:tls';
import type { Logger } from 'pino';
import { assertUsablePair, useCertificate, type KeyPair } from './certificates.js';

export interface CertificateWatchOptions {
  /** The server whose secure context is switched; open connections keep the context they started with. */
  server: TlsServer;
  certFile: string;
  keyFile: string;
  /** The pair in use now. */
  current: KeyPair;
  intervalMs: number;
  /** Called once the server uses a new pair. */
  reloaded(pair: KeyPair): void;
  /** Called when the files changed but do not hold a usable pair; the previous pair stays in use. */
  rejected(error: Error): void;
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
  let current = options.current;
  let lastRejected: string | undefined;
  let running: Promise<void> | undefined;
  let again = false;
  let debounce: NodeJS.Timeout | undefined;

  async function readPair(): Promise<KeyPair> {
    const [cert, key] = await Promise.all([readFile(options.certFile, 'utf8'), readFile(options.keyFile, 'utf8')]);
    return { key, cert };
  }

  async function reload(): Promise<void> {
    let pair: KeyPair;
    try {
      pair = await readPair();
      if (pair.cert === current.cert && pair.key === current.key) return;
      assertUsablePair(pair);
    } catch (error) {
      // Said once per distinct failure, not at every periodic re-read of the same broken files.
      const message = (error as Error).message;
      if (message !== lastRejected) {
        lastRejected = message;
        options.logger.error(
          { certFile: options.certFile, keyFile: options.keyFile, err: error },
          'certificate reload failed: keeping the previous certificate',
        );
        options.rejected(error as Error);
      }
      return;
    }
    useCertificate(options.server, pair);
    current = pair;
    options.reloaded(pair);
    lastRejected = undefined;
    options.logger.info({ certFile: options.certFile }, 'serving certificate reloaded');
  }

  function check(): Promise<void> {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      do {
        again = false;
        await reload();
      } while (again);
      running = undefined;
    })();
    return running;
  }

  const schedule = () => {
    clearTimeout(debounce);
    debounce = setTimeout(() => void check(), DEBOUNCE_MS);
    debounce.unref();
  };
  const watchers: FSWatcher[] = [];
  for (const directory of new Set([dirname(options.certFile), dirname(options.keyFile)])) {
    const cannotWatch = (error: unknown) =>
      options.logger.warn(
        { directory, err: error },
        'cannot watch the certificate directory; relying on the periodic re-read',
      );
    try {
      const watcher = watch(directory, { persistent: false }, schedule);
      watcher.on('error', cannotWatch);
      watchers.push(watcher);
    } catch (error) {
      cannotWatch(error);
    }
  }
  const interval = setInterval(() => void check(), options.intervalMs);
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
