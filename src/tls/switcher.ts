// What every certificate reader shares (the files of server.tls, the Secret of certificates.mode self, and the
// certificates' keeper for its rounds): rounds that coalesce, and the switch of a server to a new pair, checked first.
import type { Server as TlsServer } from 'node:tls';
import type { Logger } from 'pino';
import { assertUsablePair, useCertificate, type KeyPair } from './certificates.js';

/**
 * `work` run one at a time: a call while it runs asks for one more run after it and resolves with that one. A run
 * that throws rejects the callers waiting on it, and the next call starts afresh: one failure never stops the rounds.
 */
export function coalesced(work: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined;
  let again = false;
  return () => {
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      try {
        do {
          again = false;
          await work();
        } while (again);
      } finally {
        running = undefined;
        again = false;
      }
    })();
    return running;
  };
}

/**
 * Why a pair was refused: its files could not be read; it is not a certificate and its key; the API server would
 * not trust it (signed by no CA every webhook's caBundle holds, certificates.mode self).
 */
export type Refusal = 'unreadable' | 'unusable' | 'untrusted';
export const REFUSALS: readonly Refusal[] = ['unreadable', 'unusable', 'untrusted'];

export interface CertificateObserver {
  /** The server serves a new pair (not called for the first). */
  reloaded(pair: KeyPair): void;
  /** A pair offered is refused, and why; the previous pair stays in use. */
  rejected(error: Error, reason: Refusal): void;
}

/**
 * The pair a server uses, and the switch to a new one (as controller-runtime's certwatcher, pkg/certwatcher, v0.22:
 * read, check, swap; open connections keep what they started with). A pair that is not usable is refused, said once
 * per distinct failure rather than at every periodic re-read of the same broken pair.
 */
export class CertificateSwitcher {
  private lastRejected: string | undefined;
  /** Why the first pair is not trusted yet, as last said. */
  private lastWaitedFor: string | undefined;
  private server: TlsServer | undefined;
  private observer: CertificateObserver | undefined;

  constructor(
    /** Where pairs come from, for log lines: `{ certFile }` or `{ secret }`. */
    private readonly source: Record<string, string>,
    private readonly logger: Logger,
    private current?: KeyPair,
  ) {}

  /** The pair in use; undefined until a first usable pair was offered. */
  get pair(): KeyPair | undefined {
    return this.current;
  }

  /** From now on a new pair is switched to on `server`, and `observer` told. */
  serveWith(server: TlsServer, observer: CertificateObserver): void {
    this.server = server;
    this.observer = observer;
  }

  /** Whether `pair` is the pair in use. */
  serves(pair: KeyPair): boolean {
    return this.current !== undefined && pair.cert === this.current.cert && pair.key === this.current.key;
  }

  /**
   * Switches to `pair` when it is new, usable and, when `untrustedBecause` is given, trusted (it says why not);
   * true when it did (the first pair included). A first pair not trusted yet is waited for, not refused: on a first
   * install the keeper writes the Secret's pair before the caBundles that trust its CA (src/controllers/certificates/
   * keeper.ts), and a replica reading in between has no previous certificate to keep and nothing went wrong.
   */
  offer(pair: KeyPair, untrustedBecause?: () => string | undefined): boolean {
    if (this.serves(pair)) return false;
    try {
      assertUsablePair(pair);
    } catch (error) {
      this.refuse(error as Error, 'unusable');
      return false;
    }
    const untrusted = untrustedBecause?.();
    if (untrusted !== undefined && this.current === undefined) {
      if (untrusted !== this.lastWaitedFor)
        this.logger.info(
          { ...this.source, reason: untrusted },
          'certificates: waiting for every caBundle to trust the serving certificate',
        );
      this.lastWaitedFor = untrusted;
      return false;
    }
    if (untrusted !== undefined) {
      this.refuse(new Error(untrusted), 'untrusted');
      return false;
    }
    this.lastRejected = undefined;
    const first = this.current === undefined;
    this.current = pair;
    if (first) return true;
    if (this.server) useCertificate(this.server, pair);
    this.logger.info(this.source, 'serving certificate reloaded');
    this.observer?.reloaded(pair);
    return true;
  }

  /** A pair refused, or one that could not even be read: said once per distinct failure, with why. */
  refuse(error: Error, reason: Refusal): void {
    if (error.message === this.lastRejected) return;
    this.lastRejected = error.message;
    this.logger.error(
      { ...this.source, reason, err: error },
      'certificate reload failed: keeping the previous certificate',
    );
    this.observer?.rejected(error, reason);
  }
}
