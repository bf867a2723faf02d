// certificates.mode self, on the replica holding the certificates' Lease: the CA, the serving pair and the webhooks'
// caBundles kept right, once a round, as Gatekeeper's cert-controller rotator does (open-policy-agent/cert-controller
// v0.16.0, pkg/rotator/rotator.go: refreshCertIfNeeded and refreshCerts for the Secret, ReconcileWH.ensureCerts and
// injectCertToWebhook for the caBundles). What every replica serves is read from the Secret by
// src/tls/secret-reader.ts. What differs from cert-controller, whose refreshCerts(true) writes a new CA and a server
// certificate it signed in one Secret write, before any caBundle holds that CA:
// - Trust: only CAs hookguard made are trusted, recorded where only it writes (src/tls/trust.ts). Any other CA found
//   in ca.crt or a caBundle is removed, with a warning and hookguard_certificates_untrusted_cas_removed_total.
// - Order: a serving pair is judged against the CAs the caBundles hold when the round starts, never the Secret's
//   ca.crt, and re-signed by a CA only once the caBundles have held it for a round (the API server reads webhook
//   configurations through a cache of its own), so no replica serves a pair the API server does not trust yet.
// A round:
// 1. the CA: made when there is none or it is broken (garbage, not one hookguard made, a key that is not its key,
//    expired), replaced when less than a third of its validity is left. The new CA goes first in ca.crt and the
//    older CAs hookguard made stay after it until they expire. A deleted Secret starts a new chain: the old CAs stay
//    only until the new chain's serving pair has been in the Secret for two reads of every replica;
// 2. the caBundle of every webhook of both configurations: ca.crt, with the record of its CAs;
// 3. the serving pair: signed anew by the current CA when it is broken, not signed by the current CA, for other
//    names, or has less than a third of its validity left; only once every caBundle held that CA when the round began.
// A write that conflicts (409) or fails is tried again next round; nothing here ever ends the process.
import type { X509Certificate } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from 'pino';
import { apiFailure } from '../../kube/api-failure.js';
import type { Leadership } from '../../kube/leader-election.js';
import {
  caProblem,
  dueForRotation,
  isValidCa,
  issueCa,
  issuedAt,
  issueServingCertificate,
  pemBundle,
  SECRET_KEYS,
  servingProblem,
  signedBy,
  spkiHash,
  type AuthoritySettings,
  type CertificateData,
} from '../../tls/authority.js';
import {
  WEBHOOK_KINDS,
  type CertificateApi,
  type WebhookCaBundles,
  type WebhookKind,
} from '../../tls/certificate-api.js';
import { bundleCertificates } from '../../tls/pem.js';
import { coalesced } from '../../tls/switcher.js';
import { casInAnyBundle, casInEveryBundle, parseTrustRecord, renderTrustRecord, uniqueCas } from '../../tls/trust.js';

export interface KeeperSettings extends AuthoritySettings {
  refreshIntervalMs: number;
  /** One API call gets no longer than this. */
  requestTimeoutMs: number;
}

/** Where a CA hookguard did not make was found. */
export type UntrustedCaPlace = 'secret' | 'caBundle';

/** What a round reads first: the Secret, and both configurations as they are now. */
interface Observed {
  exists: boolean;
  data: CertificateData;
  resourceVersion: string | undefined;
  configurations: Map<WebhookKind, WebhookCaBundles>;
}

/** What a round trusts, judged once from what it observed. */
interface Trust {
  /** The CAs every webhook's caBundle held when the round began: what the API server trusts everywhere. */
  inEveryBundle: X509Certificate[];
  /** The CAs any webhook's caBundle held when the round began. */
  inAnyBundle: X509Certificate[];
  /** The CAs hookguard made of those marked retiring in the record (a deleted Secret's chain). */
  retiring: Set<string>;
  isOurs: (ca: X509Certificate) => boolean;
  /** A CA to keep trusting: one hookguard made, valid, and not a retired chain's. */
  trusted: (ca: X509Certificate) => boolean;
}

/** One round's state: the Secret as last written, for the steps after a write. */
interface Round {
  nowMs: number;
  signal: AbortSignal;
  observed: Observed;
  trust: Trust;
  data: CertificateData;
  resourceVersion: string | undefined;
}

export class CertificateKeeper {
  private leading: AbortSignal | undefined;
  private loop: Promise<void> | undefined;
  private readonly stopping = new AbortController();
  private readonly missingConfigurations = new Set<WebhookKind>();
  /** Untrusted CAs already reported, by place and SPKI hash, so that one is warned about once while it stays. */
  private readonly reported = new Set<string>();
  private readonly removed: Record<UntrustedCaPlace, number> = { secret: 0, caBundle: 0 };
  /** The CAs adopt() last said it took, so that a round that cannot write the record does not say it again. */
  private adoptedSaid: string | undefined;
  /** Whether a record naming none of the caBundles' CAs was said, so that it is said once while it lasts. */
  private staleRecordSaid = false;

  constructor(
    private readonly api: CertificateApi,
    private readonly settings: KeeperSettings,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  /** For the LeaderElector of the certificates' Lease: a round at once, then one every refreshIntervalMs. */
  readonly leadership: Leadership = {
    started: (signal) => {
      this.leading = signal;
      const stop = AbortSignal.any([signal, this.stopping.signal]);
      this.loop = (async () => {
        while (!stop.aborted) {
          await this.round().catch((error: unknown) =>
            this.logger.error({ err: error }, 'certificates: the round failed; trying again next round'),
          );
          await sleep(this.settings.refreshIntervalMs, undefined, { signal: stop }).catch(() => undefined);
        }
      })();
    },
    stopped: () => {
      this.leading = undefined;
    },
  };

  /** Untrusted CAs removed so far, by where they were found (a counter for the metrics). */
  untrustedCasRemoved(): Readonly<Record<UntrustedCaPlace, number>> {
    return this.removed;
  }

  async stop(): Promise<void> {
    this.stopping.abort();
    await this.loop;
  }

  /** One round, while leading; resolves once done (a round asked for meanwhile runs after it). */
  readonly round = coalesced(async () => {
    if (!this.leading || this.leading.aborted) return;
    const signal = AbortSignal.any([
      this.stopping.signal,
      this.leading,
      AbortSignal.timeout(this.settings.requestTimeoutMs),
    ]);
    try {
      await this.upkeep(signal);
    } catch (error) {
      if (!this.stopping.signal.aborted)
        this.logger.warn(
          { secret: this.api.describe(), error: apiFailure(error).message },
          'certificates: API call failed; trying again next round',
        );
    }
  });

  private async observe(signal: AbortSignal): Promise<Observed> {
    const stored = await this.api.getSecret(signal);
    const configurations = new Map<WebhookKind, WebhookCaBundles>();
    for (const kind of WEBHOOK_KINDS) {
      const current = await this.api.getWebhooks(kind, signal);
      if (current === undefined) {
        if (!this.missingConfigurations.has(kind)) {
          this.missingConfigurations.add(kind);
          this.logger.warn({ kind }, 'certificates: no webhook configuration of that name to write the CA into');
        }
        continue;
      }
      this.missingConfigurations.delete(kind);
      configurations.set(kind, current);
    }
    return {
      exists: stored !== undefined,
      data: stored?.data ?? {},
      resourceVersion: stored?.resourceVersion,
      configurations,
    };
  }

  /** The three steps (see the top of this file). */
  private async upkeep(signal: AbortSignal): Promise<void> {
    const nowMs = this.now();
    const observed = await this.observe(signal);
    const trust = this.judgeTrust(observed, nowMs);
    const round: Round = {
      nowMs,
      signal,
      observed,
      trust,
      data: observed.data,
      resourceVersion: observed.resourceVersion,
    };
    await this.keepCa(round);
    await this.writeCaBundles(round);
    await this.keepServing(round);
  }

  private async write(round: Round, next: CertificateData, reason: string, problem?: string): Promise<void> {
    round.resourceVersion = await this.api.writeSecret(next, round.resourceVersion, round.signal);
    round.data = next;
    const fields = { secret: this.api.describe(), reason, ...(problem ? { problem } : {}) };
    if (problem) this.logger.warn(fields, 'certificates: replaced what the Secret held');
    else this.logger.info(fields, 'certificates: Secret written');
  }

  /**
   * Which CAs to trust: those the record names; with no record naming a CA the caBundles hold (none written yet: a
   * first start, an upgrade from a version that kept none; or a stale or foreign one: a restore, a rollback then a
   * roll forward, a GitOps tool re-applying an exported configuration), also those adopt() takes; and always the CA
   * every caBundle holds that signed the serving certificate, which the API server trusts and the replicas serve
   * with. Valid, and not of a deleted Secret's chain once the new chain's pair has been read by every replica. Any
   * other CA found is reported.
   */
  private judgeTrust(observed: Observed, nowMs: number): Trust {
    const bundles = [...observed.configurations.values()].flatMap((configuration) => configuration.caBundles);
    const inAnyBundle = casInAnyBundle(bundles);
    const inEveryBundle = casInEveryBundle(bundles);
    const secretCertificates = bundleCertificates(observed.data[SECRET_KEYS.caBundle]);
    const serving = certificateOf(observed.data[SECRET_KEYS.cert]);

    const records = [...observed.configurations.values()].map((configuration) =>
      parseTrustRecord(configuration.trustRecord),
    );
    const ours = new Set<string>();
    const retiring = new Set<string>();
    for (const record of records) {
      for (const hash of record?.cas ?? []) ours.add(hash);
      for (const hash of record?.retiring ?? []) retiring.add(hash);
    }
    if (!inAnyBundle.some((ca) => ours.has(spkiHash(ca)))) {
      if (records.some((record) => record !== undefined) && inAnyBundle.length > 0 && !this.staleRecordSaid) {
        this.staleRecordSaid = true;
        this.logger.warn(
          { record: records.map((record) => (record ? [...record.cas] : null)) },
          'certificates: the record names none of the CAs in the caBundles: taken as missing',
        );
      }
      for (const ca of this.adopt(observed.data, secretCertificates, inAnyBundle, nowMs)) ours.add(spkiHash(ca));
    } else this.staleRecordSaid = false;
    // Dropping it would fail every call until a pair it did not sign is served: a round at least.
    for (const ca of inEveryBundle) if (serving && ca.ca && signedBy(serving, ca)) ours.add(spkiHash(ca));
    const isOurs = (ca: X509Certificate) => ours.has(spkiHash(ca));
    this.reportUntrusted(secretCertificates, inAnyBundle, isOurs, nowMs);

    const newChainLive =
      serving !== undefined &&
      inEveryBundle.some((ca) => !retiring.has(spkiHash(ca)) && isOurs(ca) && signedBy(serving, ca)) &&
      nowMs - issuedAt(serving) >= this.retireAfterMs();
    return {
      inEveryBundle,
      inAnyBundle,
      retiring,
      isOurs,
      trusted: (ca) => isValidCa(ca, nowMs) && isOurs(ca) && !(newChainLive && retiring.has(spkiHash(ca))),
    };
  }

  /** Step 1: the CA, and ca.crt holding only the CAs to trust. */
  private async keepCa(round: Round): Promise<void> {
    const { exists, data: read } = round.observed;
    const { isOurs, trusted, retiring, inAnyBundle } = round.trust;
    const secretCertificates = bundleCertificates(read[SECRET_KEYS.caBundle]);
    const older = uniqueCas([...secretCertificates, ...inAnyBundle]).filter(trusted);
    const [first] = secretCertificates;
    const broken = !exists
      ? undefined
      : first?.ca && !isOurs(first)
        ? `the first certificate of ${SECRET_KEYS.caBundle} is not a CA hookguard made`
        : caProblem(read, round.nowMs);
    if (exists && broken === undefined && first && !dueForRotation(first, round.nowMs)) {
      const kept = pemBundle([first, ...older.filter((ca) => ca.fingerprint256 !== first.fingerprint256)].map(String));
      if (kept !== read[SECRET_KEYS.caBundle])
        await this.write(
          round,
          { ...read, [SECRET_KEYS.caBundle]: kept },
          'dropped expired, unreadable, retired or unknown certificates from ca.crt',
        );
      return;
    }
    const ca = await issueCa(this.settings, round.nowMs);
    // Deleted (after a key leak, say): a new chain, and the old CAs retire once its pair is served everywhere.
    if (!exists) for (const old of older) retiring.add(spkiHash(old));
    await this.recordFirst(round, [certificateOf(ca.cert) as X509Certificate, ...older]);
    const chain = { [SECRET_KEYS.caBundle]: pemBundle([ca.cert, ...older.map(String)]), [SECRET_KEYS.caKey]: ca.key };
    if (exists) {
      await this.write(
        round,
        { ...read, ...chain },
        broken === undefined
          ? 'the CA has less than a third of its validity left: created a new one'
          : 'the CA was not usable: created a new one',
        broken,
      );
    } else if (older.length === 0) {
      // Nothing was trusted before, so nothing could be served before: the serving pair goes out at once.
      const pair = await issueServingCertificate(this.settings, ca, round.nowMs);
      await this.write(
        round,
        { [SECRET_KEYS.cert]: pair.cert, [SECRET_KEYS.key]: pair.key, ...chain },
        'no Secret: created a CA and a serving certificate',
      );
    } else {
      // The serving pair stays empty until the caBundles trust the new CA; the replicas keep serving theirs.
      await this.write(
        round,
        { [SECRET_KEYS.cert]: '', [SECRET_KEYS.key]: '', ...chain },
        'the Secret was deleted: created a new CA; the old CAs are trusted until its serving certificate is served everywhere',
      );
    }
  }

  /**
   * Before the Secret holds a new CA: the record names it (and the retiring marks of a deleted Secret's chain), the
   * caBundles left as they are. The record is what a leader trusts, and it is written where only hookguard writes; a
   * leader that stops between the Secret write and the caBundle write (a crash, a lost Lease) leaves its successor a
   * record that already names the CA in the Secret, so the successor neither calls it foreign nor forgets which CAs
   * retire. A round that fails here writes no Secret.
   */
  private async recordFirst(round: Round, cas: readonly X509Certificate[]): Promise<void> {
    const record = renderTrustRecord(cas, round.trust.retiring);
    for (const [kind, current] of round.observed.configurations) {
      if (current.trustRecord === record) continue;
      const resourceVersion = await this.api.setTrustRecord(kind, current, record, round.signal);
      round.observed.configurations.set(kind, {
        ...current,
        resourceVersion,
        trustRecord: record,
        hasAnnotations: true,
      });
    }
  }

  /** Step 2: every webhook's caBundle is ca.crt, with the record of its CAs. */
  private async writeCaBundles(round: Round): Promise<void> {
    const caBundle = round.data[SECRET_KEYS.caBundle] ?? '';
    const record = renderTrustRecord(bundleCertificates(caBundle), round.trust.retiring);
    for (const [kind, current] of round.observed.configurations) {
      if (current.trustRecord === record && current.caBundles.every((bundle) => bundle === caBundle)) continue;
      await this.api.setCaBundles(kind, current, caBundle, record, round.signal);
      this.logger.info({ kind, webhooks: current.caBundles.length }, 'certificates: caBundle written');
    }
  }

  /** Step 3: the serving pair, signed by the current CA once every caBundle held it when the round began. */
  private async keepServing(round: Round): Promise<void> {
    const { data, nowMs } = round;
    const { inEveryBundle, trusted } = round.trust;
    const [currentCa] = bundleCertificates(data[SECRET_KEYS.caBundle]);
    if (currentCa === undefined) return;
    const problem = servingProblem(data, this.settings, nowMs, inEveryBundle.filter(trusted));
    const serving = certificateOf(data[SECRET_KEYS.cert]);
    const due = problem === undefined && serving !== undefined && dueForRotation(serving, nowMs);
    const otherCa = problem === undefined && serving !== undefined && !signedBy(serving, currentCa);
    if (problem === undefined && !due && !otherCa) return;
    if (!inEveryBundle.some((ca) => ca.fingerprint256 === currentCa.fingerprint256)) {
      this.logger.debug({ problem }, 'certificates: the serving certificate waits for the caBundles to trust the CA');
      return;
    }
    const pair = await issueServingCertificate(
      this.settings,
      { cert: currentCa.toString(), key: data[SECRET_KEYS.caKey] ?? '' },
      nowMs,
    );
    const empty = data[SECRET_KEYS.cert] === '';
    await this.write(
      round,
      { ...data, [SECRET_KEYS.cert]: pair.cert, [SECRET_KEYS.key]: pair.key },
      due
        ? 'the serving certificate has less than a third of its validity left: re-signed'
        : otherCa
          ? 'serving certificate re-signed by the new CA'
          : empty
            ? 'serving certificate signed by the new CA'
            : 'serving certificate re-signed',
      // Planned work is said at info; what replaces a broken pair, at warn with the problem.
      due || otherCa || empty ? undefined : problem,
    );
  }

  /**
   * How long a new chain's serving pair must have been in the Secret before the old chain's CAs go: every replica
   * reads the Secret once per refreshIntervalMs (two reads, each within a request timeout), and certificate times
   * are whole seconds.
   */
  private retireAfterMs(): number {
    return 2 * this.settings.refreshIntervalMs + this.settings.requestTimeoutMs + 1000;
  }

  /** With no record: the CA whose key the Secret holds, and the caBundle's CA that signed the serving certificate. */
  private adopt(
    data: CertificateData,
    secretCertificates: readonly X509Certificate[],
    inAnyBundle: readonly X509Certificate[],
    nowMs: number,
  ): X509Certificate[] {
    const [first] = secretCertificates;
    const keyed = first && caProblem(data, nowMs) === undefined ? [first] : [];
    const serving = certificateOf(data[SECRET_KEYS.cert]);
    const issuer = serving ? inAnyBundle.filter((ca) => ca.ca && signedBy(serving, ca)) : [];
    const adopted = uniqueCas([...keyed, ...issuer]);
    const names = adopted.map((ca) => ca.subject.replace(/^CN=/, '')).join(',');
    if (adopted.length > 0 && names !== this.adoptedSaid) {
      this.adoptedSaid = names;
      this.logger.info(
        { cas: adopted.map((ca) => ca.subject.replace(/^CN=/, '')) },
        'certificates: no record of the CAs hookguard made yet: taking those whose key the Secret holds or that signed its serving certificate',
      );
    }
    return adopted;
  }

  /** Warns once about each CA hookguard did not make, where it was found, and counts it: the round removes it. */
  private reportUntrusted(
    secretCertificates: readonly X509Certificate[],
    inAnyBundle: readonly X509Certificate[],
    isOurs: (ca: X509Certificate) => boolean,
    nowMs: number,
  ): void {
    const seen = new Set<string>();
    const places: [UntrustedCaPlace, readonly X509Certificate[]][] = [
      ['secret', secretCertificates],
      ['caBundle', inAnyBundle],
    ];
    for (const [place, cas] of places)
      for (const ca of cas) {
        if (!isValidCa(ca, nowMs) || isOurs(ca)) continue;
        const key = `${place} ${spkiHash(ca)}`;
        seen.add(key);
        if (this.reported.has(key)) continue;
        this.reported.add(key);
        this.removed[place]++;
        this.logger.warn(
          {
            where: place === 'secret' ? `${this.api.describe()} ${SECRET_KEYS.caBundle}` : 'caBundle',
            subject: ca.subject,
            fingerprint256: ca.fingerprint256,
          },
          'certificates: removed a CA hookguard did not make',
        );
      }
    for (const key of this.reported) if (!seen.has(key)) this.reported.delete(key);
  }
}

function certificateOf(pem: string | undefined): X509Certificate | undefined {
  return bundleCertificates(pem)[0];
}
