import type { AddressInfo } from 'node:net';
import type { Server as TlsServer } from 'node:tls';
import type { FastifyInstance } from 'fastify';
import { pino, type Logger } from 'pino';
import { startApiDiscovery } from '../discovery/api-groups.js';
import { startNamespaceWatch } from '../discovery/namespaces.js';
import { startDiscovery, startFluxDiscovery } from '../discovery/start.js';
import { buildApp, buildProbeApp } from '../http/app.js';
import { Lifecycle, shutDown, shutdownLine, shutdownSettings } from '../http/lifecycle.js';
import { BoundedLogDestination, isoTimeOncePerMillisecond, stdoutStream } from '../http/log-destination.js';
import { knownArgoCdInstances, Metrics } from '../http/metrics.js';
import { watchCertificates, type CertificateWatch } from '../tls/reload.js';
import { loadTls, type KeyPair, type TlsMaterial } from '../tls/certificates.js';
import type { Refusal } from '../tls/switcher.js';
import { startSelfManagedCertificates } from '../controllers/certificates/start.js';
import { startControllers } from '../controllers/start.js';
import type { Config } from '../config/keys.js';
import { EXIT, ListenError } from '../errors.js';
import { loadConfigWithFlags, parseArguments } from './arguments.js';
import type { CommandIO } from './io.js';

export const SERVE_USAGE = `Usage: hookguard serve [--config FILE] [--host H] [--port N] [--mode enforce|audit] [--argocd-version V]
Serves the admission webhook over HTTPS: POST /mutate, POST /validate, GET /healthz, GET /readyz, GET /metrics;
and GET /healthz, GET /readyz, GET /metrics over plain HTTP on server.probePort (8080).
Without server.tls.certFile/keyFile it generates a self-signed development certificate at start; with
certificates.mode self it keeps its own CA and serving certificate in a Secret (docs/server.md).
Exit status: ${EXIT.ok} every request answered after SIGTERM or SIGINT, ${EXIT.shutdownForced} connections still open at server.shutdownTimeoutMs
were cut, ${EXIT.badInput} bad input (arguments, config, certificate files, port), ${EXIT.internal} internal error.`;

/** Why the server could not listen, in the user's terms: a busy port is the usual cause, and says so. */
/** How to choose another port, for each listener. */
const CHOOSE_PORT = {
  'server.port': 'choose another port with --port, HOOKGUARD_PORT or server.port',
  'server.probePort': 'choose another probe port with HOOKGUARD_PROBE_PORT or server.probePort',
} as const;

function listenError(host: string, port: number, error: NodeJS.ErrnoException, choose: string): ListenError {
  const where = `${host}:${port}`;
  if (error.code === 'EADDRINUSE')
    return new ListenError(`port ${port} is already in use (on ${where}): stop what listens there, or ${choose}`);
  if (error.code === 'EACCES')
    return new ListenError(
      `not allowed to listen on port ${port} (${where}): ports below 1024 need privileges; ${choose}`,
    );
  if (error.code === 'EADDRNOTAVAIL')
    return new ListenError(`cannot listen on ${where}: ${host} is not an address of this host (--host, server.host)`);
  return new ListenError(`cannot listen on ${where}: ${error.message}`);
}

/** The log: pino into a bounded destination, so a slow stdout drops lines (counted) rather than holding requests. */
function startLogging(config: Readonly<Config>) {
  const destination = new BoundedLogDestination(stdoutStream(), config.log.maxQueueBytes);
  const logger = pino(
    { level: config.log.level, base: { service: 'hookguard' }, timestamp: isoTimeOncePerMillisecond() },
    destination,
  );
  return {
    logger,
    dropped: () => destination.droppedByLine,
    /** Hands what is queued to stdout within log.flushTimeoutMs, or says on stderr what was lost. */
    async stop(io: CommandIO): Promise<void> {
      const flushed = await destination.end(config.log.flushTimeoutMs);
      if (!flushed.flushed)
        io.stderr(
          `hookguard: stdout took no more log lines within log.flushTimeoutMs (${config.log.flushTimeoutMs} ms): ${flushed.unwrittenBytes} bytes of them were not written (${destination.dropped} lines dropped before)\n`,
        );
    },
  };
}

/**
 * The serving certificate: kept by hookguard in a Secret (certificates.mode self), read from files and reloaded when
 * they change, or a generated development certificate.
 */
async function startCertificates(config: Readonly<Config>, env: CommandIO['env'], logger: Logger) {
  const selfManaged =
    config.certificates.mode === 'self' ? startSelfManagedCertificates(config, env, logger) : undefined;
  const tls: TlsMaterial = selfManaged
    ? { ...(await selfManaged.firstPair()), generated: false }
    : await loadTls(config.server.tls);
  if (tls.generated) {
    logger.warn(
      'no TLS certificate configured (server.tls.certFile/keyFile): generated a self-signed development certificate for localhost, valid 30 days',
    );
  }
  let inUse = tls.cert;
  let fileWatch: CertificateWatch | undefined;
  return {
    tls,
    /** CAs hookguard did not make that the keeper removed (certificates.mode self only). */
    untrustedCasRemoved: selfManaged?.untrustedCasRemoved,
    /** The serving certificate in use (PEM): it changes with every reload. */
    inUse: () => inUse,
    /** From now on, new certificates are handed to `server`. */
    serveWith(server: TlsServer, metrics: Metrics): void {
      const observer = {
        reloaded: (pair: KeyPair) => {
          inUse = pair.cert;
          metrics.certificate(pair.cert, true);
        },
        rejected: (_error: Error, reason: Refusal) => metrics.certificateRefused(reason),
      };
      const { certFile, keyFile, reloadIntervalMs } = config.server.tls;
      if (selfManaged) {
        selfManaged.serveWith(server, observer);
      } else if (certFile !== null && keyFile !== null) {
        fileWatch = watchCertificates({
          server,
          certFile,
          keyFile,
          current: tls,
          intervalMs: reloadIntervalMs,
          logger,
          ...observer,
        });
      }
    },
    async stop(): Promise<void> {
      fileWatch?.close();
      await selfManaged?.stop();
    },
  };
}

/** Resolves with the first SIGTERM or SIGINT, having begun the shutdown; later ones are left to shutdownTimeoutMs. */
function signalled(lifecycle: Lifecycle): Promise<string> {
  return new Promise<string>((resolve) => {
    const received = (name: string) => () => {
      if (lifecycle.shuttingDown) return;
      lifecycle.beginShutdown();
      resolve(name);
    };
    process.on('SIGTERM', received('SIGTERM'));
    process.on('SIGINT', received('SIGINT'));
  });
}

async function listen(
  server: FastifyInstance,
  host: string,
  key: keyof typeof CHOOSE_PORT,
  port: number,
): Promise<number> {
  try {
    await server.listen({ host, port });
  } catch (error) {
    throw listenError(host, port, error as NodeJS.ErrnoException, CHOOSE_PORT[key]);
  }
  return (server.server.address() as AddressInfo).port;
}

/** `hookguard serve`: listens until SIGTERM or SIGINT, then shuts down gracefully (exit 0 when every request was answered). */
export async function runServe(argv: readonly string[], io: CommandIO): Promise<number> {
  const { values } = parseArguments(argv, {
    options: {
      config: { type: 'string' },
      host: { type: 'string' },
      port: { type: 'string' },
      mode: { type: 'string' },
      'argocd-version': { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  if (values.help) {
    io.stdout(`${SERVE_USAGE}\n`);
    return EXIT.ok;
  }
  const config = loadConfigWithFlags(io, values.config, [
    { flag: 'host', key: 'server.host', value: values.host },
    { flag: 'port', key: 'server.port', value: values.port },
    { flag: 'mode', key: 'mode', value: values.mode },
    { flag: 'argocd-version', key: 'argocd.version', value: values['argocd-version'] },
  ]);
  const logging = startLogging(config);
  const { logger } = logging;
  const certificates = await startCertificates(config, io.env, logger);
  // The controllers read `discovery` and `metrics` when they first run, after the Lease is taken. Started first, as
  // the self-test's config check may still refuse to serve.
  const controllers = startControllers(config, io.env, logger, {
    selfTest: {
      sources: {
        certificate: certificates.inUse,
        discovery: () => discovery.source.status(),
        flux: () => fluxDiscovery.source.status(),
      },
      observe: (outcome, atMs) => metrics.selfTest(outcome, atMs),
    },
    hooks: { failure: (reason) => metrics.hookFailure(reason), failing: (count) => metrics.failing(count) },
    argocd: () => discovery.source,
  });
  const discovery = startDiscovery(config, io.env, logger);
  const fluxDiscovery = startFluxDiscovery(config, io.env, logger);
  const namespaceWatch = startNamespaceWatch(config, io.env, logger);
  const apiDiscovery = startApiDiscovery(config, io.env, logger);
  const metrics = new Metrics({
    processMetrics: true,
    argocdInstances: () => knownArgoCdInstances(config.argocd.version, () => discovery.source.instances()),
    selfTest: controllers.selfTest.status().enabled,
    hookWatch: controllers.hookWatch.enabled,
    logLinesDropped: logging.dropped,
    untrustedCasRemoved: certificates.untrustedCasRemoved,
  });
  metrics.certificate(certificates.tls.cert, false);
  const lifecycle = new Lifecycle();
  const shared = {
    logger,
    argocd: discovery.source,
    flux: fluxDiscovery.source,
    namespaces: namespaceWatch.source,
    cluster: apiDiscovery.source,
    metrics,
    lifecycle,
  };
  const app = buildApp(config, { ...shared, tls: certificates.tls, selfTest: controllers.selfTest });
  const probes = buildProbeApp(config, { ...shared, selfTest: controllers.selfTest });
  // The Leases are released at once, so other replicas take the controllers and certificates over while this one
  // drains; the watches serve the requests still in flight.
  const stopLeading = () => Promise.all([controllers.stop(), certificates.stop()]);
  const stopWatches = () =>
    Promise.all([discovery.stop(), fluxDiscovery.stop(), namespaceWatch.stop(), apiDiscovery.stop()]);
  let port: number;
  let probePort: number;
  try {
    port = await listen(app, config.server.host, 'server.port', config.server.port);
    probePort = await listen(probes, config.server.host, 'server.probePort', config.server.probePort);
  } catch (error) {
    await Promise.all([stopLeading(), stopWatches(), app.close(), probes.close()]);
    throw error;
  }
  // Listening for signals before saying ready: whoever reads that line may stop the process at once.
  const signal = signalled(lifecycle);
  logger.info(
    {
      port,
      probePort,
      mode: config.mode,
      argocdVersion:
        config.argocd.version ?? (discovery.source.status().enabled ? 'discovered per instance' : 'unknown'),
      advisories: config.advisories.map((advisory) => advisory.id),
    },
    'hookguard ready',
  );
  certificates.serveWith(app.server as unknown as TlsServer, metrics);
  const received = await signal;
  const settings = shutdownSettings(received, config.server);
  logger.info(
    { signal: received, shutdownDelayMs: settings.shutdownDelayMs, shutdownTimeoutMs: settings.shutdownTimeoutMs },
    shutdownLine(received, settings),
  );
  const leadingStopped = stopLeading();
  const result = await shutDown(app, lifecycle, settings, logger);
  // The probes answer (readiness failing) until the webhook has drained.
  await Promise.all([leadingStopped, stopWatches(), probes.close()]);
  await logging.stop(io);
  return result === 'drained' ? EXIT.ok : EXIT.shutdownForced;
}
