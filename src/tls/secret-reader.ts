// certificates.mode self, on every replica: the serving pair read from the Secret every refreshIntervalMs and
// switched to when it changes, as controller-runtime's certwatcher (pkg/certwatcher/certwatcher.go, v0.22.0:
// ReadCertificate on every change or poll tick, the new pair used for new handshakes) reads its files. What keeps the
// Secret right is the leader's keeper, src/controllers/certificates/.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Server as TlsServer } from 'node:tls';
import type { Logger } from 'pino';
import { apiFailure } from '../kube/api-failure.js';
import { SECRET_KEYS } from './authority.js';
import { WEBHOOK_KINDS, type CertificateApi } from './certificate-api.js';
import type { KeyPair } from './certificates.js';
import { CertificateSwitcher, coalesced, type CertificateObserver } from './switcher.js';
import { untrustedBecause } from './trust.js';

/** While no pair is known yet (the leader is still creating the Secret), the Secret is read this often. */
const FIRST_PAIR_POLL_MS = 500;

export interface SecretReaderSettings {
  refreshIntervalMs: number;
  /** One API call gets no longer than this. */
  requestTimeoutMs: number;
}

export class SecretCertificateReader {
  private readonly switcher: CertificateSwitcher;
  private readonly stopping = new AbortController();
  private loop: Promise<void> | undefined;
  private readonly firstPairSeen: Promise<KeyPair>;
  private resolveFirstPair: (pair: KeyPair) => void = () => undefined;

  constructor(
    private readonly api: CertificateApi,
    private readonly settings: SecretReaderSettings,
    private readonly logger: Logger,
  ) {
    this.switcher = new CertificateSwitcher({ secret: api.describe() }, logger);
    this.firstPairSeen = new Promise((resolve) => (this.resolveFirstPair = resolve));
  }

  /** Reads the Secret now; resolves once any switch is done (a read asked for meanwhile runs after it). */
  readonly read = coalesced(async () => {
    const signal = AbortSignal.any([this.stopping.signal, AbortSignal.timeout(this.settings.requestTimeoutMs)]);
    let data;
    try {
      data = (await this.api.getSecret(signal))?.data;
    } catch (error) {
      if (!this.stopping.signal.aborted)
        this.logger.warn(
          { secret: this.api.describe(), error: apiFailure(error).message },
          'certificates: API call failed; trying again next round',
        );
      return;
    }
    const pair = { cert: data?.[SECRET_KEYS.cert] ?? '', key: data?.[SECRET_KEYS.key] ?? '' };
    // No Secret, or one the keeper made without a serving pair yet (a new CA waits for the caBundles): nothing to read.
    if ((pair.cert === '' && pair.key === '') || this.switcher.serves(pair)) return;
    // Whoever can write the Secret must not make the replicas serve what the API server does not trust: a new pair
    // is served only when every webhook's caBundle holds the CA that signed it.
    let bundles: (string | undefined)[];
    try {
      bundles = await this.caBundles(signal);
    } catch (error) {
      if (!this.stopping.signal.aborted)
        this.logger.warn(
          { secret: this.api.describe(), error: apiFailure(error).message },
          'certificates: reading the caBundles failed; keeping the certificate in use, trying again next round',
        );
      return;
    }
    const first = this.switcher.pair === undefined;
    if (this.switcher.offer(pair, () => untrustedBecause(pair.cert, bundles, Date.now())) && first)
      this.resolveFirstPair(pair);
  });

  /** Every webhook's caBundle in both configurations (none of a configuration that does not exist). */
  private async caBundles(signal: AbortSignal): Promise<(string | undefined)[]> {
    const bundles: (string | undefined)[] = [];
    for (const kind of WEBHOOK_KINDS) bundles.push(...((await this.api.getWebhooks(kind, signal))?.caBundles ?? []));
    return bundles;
  }

  /** Starts reading the Secret every refreshIntervalMs (every 500 ms until a first usable pair is found). */
  start(): void {
    this.loop ??= (async () => {
      while (!this.stopping.signal.aborted) {
        await this.read().catch((error: unknown) =>
          this.logger.error({ secret: this.api.describe(), err: error }, 'certificates: reading the Secret failed'),
        );
        const pause = this.switcher.pair ? this.settings.refreshIntervalMs : FIRST_PAIR_POLL_MS;
        await sleep(pause, undefined, { signal: this.stopping.signal }).catch(() => undefined);
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    await this.loop;
  }

  /** The first usable pair the Secret holds. */
  firstPair(): Promise<KeyPair> {
    return this.firstPairSeen;
  }

  /** From now on a new pair in the Secret is switched to on `server`, and `observer` told. */
  serveWith(server: TlsServer, observer: CertificateObserver): void {
    this.switcher.serveWith(server, observer);
  }
}
