// certificates.mode: self. Every replica reads the serving certificate from the Secret and hot-reloads it; the
// replica holding the certificates' Lease also keeps the Secret and the webhooks' caBundle right, once a round:
// 1. the CA: created when there is none or it is broken (garbage, a key that is not its key, expired), replaced when
//    less than a third of its validity is left. The new CA goes first in ca.crt, the old CAs that are still valid
//    stay after it, and the serving pair is left as it was when it is still good;
// 2. the caBundle of every webhook of both configurations: ca.crt, so the API server trusts every CA a replica's
//    certificate may come from;
// 3. the serving certificate, only once step 2 is done, and a round after a new CA: re-signed by the current CA when it is broken, signed by
//    another CA (step 1 just rotated it), for other names, or has less than a third of its validity left.
// A write that conflicts (409) or fails is tried again next round; nothing here ever ends the process.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Server as TlsServer } from 'node:tls';
import type { Logger } from 'pino';
import { randomUUID, X509Certificate } from 'node:crypto';
import { hostname } from 'node:os';
import type { Config } from '../config/keys.js';
import { ConfigError } from '../errors.js';
import { apiFailure } from '../kube/api-failure.js';
import { kubeConnection } from '../kube/kubeconfig.js';
import { kubeLeaseLock, LeaderElector, type Leadership } from '../kube/leader-election.js';
import {
  bundleCertificates,
  caProblem,
  dueForRotation,
  issueCa,
  issueServingCertificate,
  pemBundle,
  SECRET_KEYS,
  servingProblem,
  validCas,
  type AuthoritySettings,
  type CertificateData,
} from './authority.js';
import {
  kubeCertificateApi,
  type CertificateApi,
  type StoredCertificates,
  type WebhookKind,
} from './certificate-api.js';
import { assertUsablePair, useCertificate, type KeyPair } from './certificates.js';

export interface SelfManagedSettings extends AuthoritySettings {
  refreshIntervalMs: number;
  /** One API call gets no longer than this. */
  requestTimeoutMs: number;
}

export interface CertificateObserver {
  /** The server serves a new pair (not called for the first). */
  reloaded(pair: KeyPair): void;
  /** The Secret's pair is not usable; the previous pair stays in use. */
  rejected(error: Error): void;
}

const WEBHOOK_KINDS: readonly WebhookKind[] = ['MutatingWebhookConfiguration', 'ValidatingWebhookConfiguration'];
/** While no pair is known yet (the leader is still creating the Secret), the Secret is read this often. */
const FIRST_PAIR_POLL_MS = 500;

export class SelfManagedCertificates {
  private current: KeyPair | undefined;
  private server: TlsServer | undefined;
  private observer: CertificateObserver | undefined;
  private leading: AbortSignal | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  private lastRejected: string | undefined;
  private readonly missingConfigurations = new Set<WebhookKind>();
  private readonly stopping = new AbortController();
  private loop: Promise<void> | undefined;
  private readonly firstPairSeen: Promise<KeyPair>;
  private resolveFirstPair: (pair: KeyPair) => void = () => undefined;

  constructor(
    private readonly api: CertificateApi,
    private readonly settings: SelfManagedSettings,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {
    this.firstPairSeen = new Promise((resolve) => (this.resolveFirstPair = resolve));
  }

  /** For the LeaderElector of the certificates' Lease: the leader looks after the Secret and the caBundles. */
  readonly leadership: Leadership = {
    started: (signal) => {
      this.leading = signal;
      void this.round();
    },
    stopped: () => {
      this.leading = undefined;
    },
  };

  /** Starts reading the Secret every refreshIntervalMs (every 500 ms until a first usable pair is found). */
  start(): void {
    this.loop ??= (async () => {
      while (!this.stopping.signal.aborted) {
        await this.round();
        const pause = this.current ? this.settings.refreshIntervalMs : FIRST_PAIR_POLL_MS;
        await sleep(pause, undefined, { signal: this.stopping.signal }).catch(() => undefined);
      }
    })();
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    await this.loop;
    await this.running;
  }

  /** The first usable pair the Secret holds. */
  firstPair(): Promise<KeyPair> {
    return this.firstPairSeen;
  }

  /** From now on a new pair in the Secret is switched to on `server`, and `observer` told. */
  serveWith(server: TlsServer, observer: CertificateObserver): void {
    this.server = server;
    this.observer = observer;
  }

  /** One round: the leader's upkeep, then the reload; resolves once done (a round asked for meanwhile runs after). */
  round(): Promise<void> {
    if (this.running) {
      this.again = true;
      return this.running;
    }
    this.running = (async () => {
      do {
        this.again = false;
        await this.roundOnce();
      } while (this.again && !this.stopping.signal.aborted);
      this.running = undefined;
    })();
    return this.running;
  }

  private async roundOnce(): Promise<void> {
    const signal = AbortSignal.any([this.stopping.signal, AbortSignal.timeout(this.settings.requestTimeoutMs)]);
    let stored: StoredCertificates | undefined;
    try {
      if (this.leading && !this.leading.aborted) await this.upkeep(signal);
      stored = await this.api.getSecret(signal);
    } catch (error) {
      if (!this.stopping.signal.aborted)
        this.logger.warn(
          { secret: this.api.describe(), error: apiFailure(error).message },
          'certificates: API call failed; trying again next round',
        );
      return;
    }
    if (stored) this.reload(stored.data);
  }

  private reload(data: CertificateData): void {
    const pair = { cert: data[SECRET_KEYS.cert] ?? '', key: data[SECRET_KEYS.key] ?? '' };
    if (this.current && pair.cert === this.current.cert && pair.key === this.current.key) return;
    try {
      assertUsablePair(pair);
    } catch (error) {
      // Said once per distinct failure, not at every round; the leader replaces a broken Secret.
      const message = (error as Error).message;
      if (message !== this.lastRejected) {
        this.lastRejected = message;
        this.logger.error(
          { secret: this.api.describe(), err: error },
          'certificate in the Secret is not usable: keeping the previous certificate',
        );
        this.observer?.rejected(error as Error);
      }
      return;
    }
    this.lastRejected = undefined;
    const first = this.current === undefined;
    this.current = pair;
    if (first) {
      this.resolveFirstPair(pair);
      return;
    }
    if (this.server) useCertificate(this.server, pair);
    this.observer?.reloaded(pair);
    this.logger.info({ secret: this.api.describe() }, 'serving certificate reloaded from the Secret');
  }

  /** The leader's three steps (see the top of this file). */
  private async upkeep(signal: AbortSignal): Promise<void> {
    const nowMs = this.now();
    const stored = await this.api.getSecret(signal);
    let data: CertificateData = stored?.data ?? {};
    let resourceVersion = stored?.resourceVersion;

    const write = async (next: CertificateData, reason: string, problem?: string) => {
      resourceVersion = await this.api.writeSecret(next, resourceVersion, signal);
      data = next;
      const fields = { secret: this.api.describe(), reason, ...(problem ? { problem } : {}) };
      if (problem) this.logger.warn(fields, 'certificates: replaced what the Secret held');
      else this.logger.info(fields, 'certificates: Secret written');
    };

    // 1. The CA.
    let servingWaitsARound = false;
    const [currentCa] = bundleCertificates(data[SECRET_KEYS.caBundle]);
    const broken = stored === undefined ? undefined : caProblem(data, nowMs);
    if (stored === undefined || broken !== undefined || (currentCa && dueForRotation(currentCa, nowMs))) {
      const ca = await issueCa(this.settings, nowMs);
      const keepServing = stored !== undefined && servingProblem(data, this.settings, nowMs) === undefined;
      const serving = keepServing
        ? { cert: data[SECRET_KEYS.cert] ?? '', key: data[SECRET_KEYS.key] ?? '' }
        : await issueServingCertificate(this.settings, ca, nowMs);
      // Still trusted after it: the old CAs of the Secret, and those the caBundle holds now (the only record of the
      // CA that signed what the replicas serve, when the Secret's ca.crt is garbage).
      const trusted = [
        ...validCas(data[SECRET_KEYS.caBundle], nowMs),
        ...validCas(await this.caBundleNow(signal), nowMs),
      ];
      const next: CertificateData = {
        [SECRET_KEYS.cert]: serving.cert,
        [SECRET_KEYS.key]: serving.key,
        [SECRET_KEYS.caBundle]: pemBundle([ca.cert, ...new Set(trusted)]),
        [SECRET_KEYS.caKey]: ca.key,
      };
      const reason =
        stored === undefined
          ? 'no Secret: created a CA and a serving certificate'
          : broken !== undefined
            ? 'the CA was not usable: created a new one'
            : 'the CA has less than a third of its validity left: created a new one';
      await write(next, reason, broken);
      servingWaitsARound = keepServing;
    } else {
      const kept = pemBundle(validCas(data[SECRET_KEYS.caBundle], nowMs));
      if (kept !== pemBundle(bundleCertificates(data[SECRET_KEYS.caBundle]).map((ca) => ca.toString())))
        await write({ ...data, [SECRET_KEYS.caBundle]: kept }, 'dropped expired or unreadable CAs from ca.crt');
    }

    // 2. The caBundles.
    const caBundle = Buffer.from(data[SECRET_KEYS.caBundle] ?? '', 'utf8').toString('base64');
    for (const kind of WEBHOOK_KINDS) await this.inject(kind, caBundle, signal);

    // 3. The serving certificate, signed by the CA every caBundle now trusts.
    // After a new CA, a round later: the API server reads webhook configurations through a cache of its own.
    if (servingWaitsARound) return;
    const problem = servingProblem(data, this.settings, nowMs);
    const due = problem === undefined && dueForRotation(new X509Certificate(data[SECRET_KEYS.cert] ?? ''), nowMs);
    if (problem !== undefined || due) {
      const [caCert] = bundleCertificates(data[SECRET_KEYS.caBundle]);
      const serving = await issueServingCertificate(
        this.settings,
        { cert: caCert?.toString() ?? '', key: data[SECRET_KEYS.caKey] ?? '' },
        nowMs,
      );
      await write(
        { ...data, [SECRET_KEYS.cert]: serving.cert, [SECRET_KEYS.key]: serving.key },
        due
          ? 'the serving certificate has less than a third of its validity left: re-signed'
          : 'serving certificate re-signed',
        problem,
      );
    }
  }

  /** The first webhook's caBundle in the MutatingWebhookConfiguration, decoded ('' when there is none). */
  private async caBundleNow(signal: AbortSignal): Promise<string> {
    const [bundle] = (await this.api.getWebhooks('MutatingWebhookConfiguration', signal))?.caBundles ?? [];
    return Buffer.from(bundle ?? '', 'base64').toString('utf8');
  }

  private async inject(kind: WebhookKind, caBundle: string, signal: AbortSignal): Promise<void> {
    const current = await this.api.getWebhooks(kind, signal);
    if (current === undefined) {
      if (!this.missingConfigurations.has(kind)) {
        this.missingConfigurations.add(kind);
        this.logger.warn({ kind }, 'certificates: no webhook configuration of that name to write the CA into');
      }
      return;
    }
    this.missingConfigurations.delete(kind);
    if (current.caBundles.every((bundle) => bundle === caBundle)) return;
    await this.api.setCaBundles(kind, current, caBundle, signal);
    this.logger.info({ kind, webhooks: current.caBundles.length }, 'certificates: caBundle written');
  }
}

export interface RunningSelfManagedCertificates {
  firstPair(): Promise<KeyPair>;
  serveWith(server: TlsServer, observer: CertificateObserver): void;
  stop(): Promise<void>;
}

/**
 * certificates.mode self for `serve`: the Secret read by this replica, and a Lease of its own
 * (`<leaderElection.leaseName>-certificates`, so it runs whether or not the self-test does) whose holder keeps the
 * Secret and the caBundles right. Throws a ConfigError outside a cluster.
 */
export function startSelfManagedCertificates(
  config: Readonly<Config>,
  env: Readonly<Record<string, string | undefined>>,
  logger: Logger,
): RunningSelfManagedCertificates {
  const connection = kubeConnection(env);
  if (!connection)
    throw new ConfigError(
      'certificates.mode',
      'self needs a cluster: there is no kubeconfig and no in-cluster service account',
    );
  const { certificates, leaderElection } = config;
  const certificatesLogger = logger.child({ component: 'certificates' });
  const managed = new SelfManagedCertificates(
    kubeCertificateApi(connection.kubeConfig, certificates),
    { ...certificates, requestTimeoutMs: Math.min(certificates.refreshIntervalMs, 10_000) },
    certificatesLogger,
  );
  const leaseName = `${leaderElection.leaseName}-certificates`;
  const elector = new LeaderElector(
    kubeLeaseLock(connection.kubeConfig, leaderElection.leaseNamespace, leaseName),
    `${hostname()}_${randomUUID()}`,
    { ...leaderElection, leaseName },
    certificatesLogger,
    managed.leadership,
  );
  logger.info(
    {
      secret: `${certificates.namespace}/${certificates.secretName}`,
      webhookConfigurations: certificates.webhookName,
      lease: `${leaderElection.leaseNamespace}/${leaseName}`,
    },
    'certificates managed by hookguard: waiting for the serving certificate in the Secret',
  );
  elector.start();
  managed.start();
  return {
    firstPair: () => managed.firstPair(),
    serveWith: (server, observer) => managed.serveWith(server, observer),
    stop: async () => {
      await elector.stop();
      await managed.stop();
    },
  };
}
