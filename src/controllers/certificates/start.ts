// certificates.mode self for `serve`: every replica reads the Secret (src/tls/secret-reader.ts), and the holder of a
// Lease of its own (`<leaderElection.leaseName>-certificates`, so it runs whether or not the self-test does) keeps
// the Secret and the caBundles right (keeper.ts).
import type { Server as TlsServer } from 'node:tls';
import type { Logger } from 'pino';
import type { Config } from '../../config/keys.js';
import { ConfigError } from '../../errors.js';
import { kubeConnection } from '../../kube/kubeconfig.js';
import { kubeLeaseLock, LeaderElector } from '../../kube/leader-election.js';
import { kubeCertificateApi } from '../../tls/certificate-api.js';
import type { KeyPair } from '../../tls/certificates.js';
import { SecretCertificateReader } from '../../tls/secret-reader.js';
import type { CertificateObserver } from '../../tls/switcher.js';
import { leaderIdentity } from '../leader-loop.js';
import { CertificateKeeper, type UntrustedCaPlace } from './keeper.js';

export interface RunningSelfManagedCertificates {
  firstPair(): Promise<KeyPair>;
  serveWith(server: TlsServer, observer: CertificateObserver): void;
  /** CAs hookguard did not make that the keeper removed, by where they were found (for the metrics). */
  readonly untrustedCasRemoved: () => Readonly<Record<UntrustedCaPlace, number>>;
  stop(): Promise<void>;
}

/** Throws a ConfigError outside a cluster. */
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
  const api = kubeCertificateApi(connection.kubeConfig, certificates);
  const settings = { ...certificates, requestTimeoutMs: Math.min(certificates.refreshIntervalMs, 10_000) };
  const reader = new SecretCertificateReader(api, settings, certificatesLogger);
  const keeper = new CertificateKeeper(api, settings, certificatesLogger);
  const leaseName = `${leaderElection.leaseName}-certificates`;
  const elector = new LeaderElector(
    kubeLeaseLock(connection.kubeConfig, leaderElection.leaseNamespace, leaseName),
    leaderIdentity(),
    { ...leaderElection, leaseName },
    certificatesLogger,
    keeper.leadership,
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
  reader.start();
  return {
    firstPair: () => reader.firstPair(),
    serveWith: (server, observer) => reader.serveWith(server, observer),
    untrustedCasRemoved: () => keeper.untrustedCasRemoved(),
    stop: async () => {
      await elector.stop();
      await keeper.stop();
      await reader.stop();
    },
  };
}
