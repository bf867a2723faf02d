import type { AddressInfo } from 'node:net';
import type { Server as TlsServer } from 'node:tls';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { startApiDiscovery } from '../discovery/api-groups.js';
import { startNamespaceWatch } from '../discovery/namespaces.js';
import { startDiscovery } from '../discovery/start.js';
import { buildApp, buildProbeApp } from '../http/app.js';
import { Lifecycle, shutDown } from '../http/lifecycle.js';
import { BoundedLogDestination, stdoutStream } from '../http/log-destination.js';
import { knownArgoCdInstances, Metrics } from '../http/metrics.js';
import { watchCertificates, type CertificateWatch } from '../tls/reload.js';
import { loadTls, type KeyPair } from '../tls/certificates.js';
import { startSelfManagedCertificates } from '../controllers/certificates/start.js';
import { startSelfTest } from '../selftest/start.js';
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
  const logDestination = new BoundedLogDestination(stdoutStream(), config.log.maxQueueBytes);
  const logger = pino(
    {
      level: config.log.level,
      base: { service: 'hookguard' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    logDestination,
  );
  const selfManaged =
    config.certificates.mode === 'self' ? startSelfManagedCertificates(config, io.env, logger) : undefined;
  const tls = selfManaged ? { ...(await selfManaged.firstPair()), generated: false } : await loadTls(config.server.tls);
  if (tls.generated) {
    logger.warn(
      'no TLS certificate configured (server.tls.certFile/keyFile): generated a self-signed development certificate for localhost, valid 30 days',
    );
  }
  let certificateInUse = tls.cert;
  // Read when the first self-test runs, after the Lease is taken: `discovery` and `metrics` exist by then. Started
  // first, as its config check may still refuse to serve.
  const selfTest = startSelfTest(
    config,
    io.env,
    logger,
    { certificate: () => certificateInUse, discovery: () => discovery.source.status() },
    (outcome, atMs) => metrics.selfTest(outcome, atMs),
  );
  const discovery = startDiscovery(config, io.env, logger);
  const namespaceWatch = startNamespaceWatch(config, io.env, logger);
  const apiDiscovery = startApiDiscovery(config, io.env, logger);
  const stopWatches = () => Promise.all([discovery.stop(), namespaceWatch.stop(), apiDiscovery.stop()]);
  const lifecycle = new Lifecycle();
  const metrics = new Metrics({
    processMetrics: true,
    argocdInstances: () => knownArgoCdInstances(config.argocd.version, () => discovery.source.instances()),
    selfTest: selfTest.status().enabled,
    logLinesDropped: () => logDestination.droppedByLine,
    untrustedCasRemoved: selfManaged?.untrustedCasRemoved,
  });
  metrics.certificate(tls.cert, false);
  const app = buildApp(config, {
    logger,
    tls,
    argocd: discovery.source,
    namespaces: namespaceWatch.source,
    cluster: apiDiscovery.source,
    metrics,
    lifecycle,
    selfTest,
  });
  const probes = buildProbeApp(config, {
    logger,
    argocd: discovery.source,
    namespaces: namespaceWatch.source,
    cluster: apiDiscovery.source,
    metrics,
    lifecycle,
    selfTest,
  });
  const listen = async (server: FastifyInstance, key: 'server.port' | 'server.probePort', port: number) => {
    try {
      await server.listen({ host: config.server.host, port });
    } catch (error) {
      await Promise.all([stopWatches(), selfTest.stop(), selfManaged?.stop(), app.close(), probes.close()]);
      throw listenError(config.server.host, port, error as NodeJS.ErrnoException, CHOOSE_PORT[key]);
    }
    return (server.server.address() as AddressInfo).port;
  };
  const port = await listen(app, 'server.port', config.server.port);
  const probePort = await listen(probes, 'server.probePort', config.server.probePort);
  // Listening for signals before saying ready: whoever reads that line may stop the process at once.
  const signalled = new Promise<string>((resolve) => {
    const received = (name: string) => () => {
      // Only the first signal counts; shutdownTimeoutMs bounds the rest.
      if (lifecycle.shuttingDown) return;
      lifecycle.beginShutdown();
      resolve(name);
    };
    process.on('SIGTERM', received('SIGTERM'));
    process.on('SIGINT', received('SIGINT'));
  });
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
  const { certFile, keyFile, reloadIntervalMs } = config.server.tls;
  let certificates: CertificateWatch | undefined;
  const certificateObserver = {
    reloaded: (pair: KeyPair) => {
      certificateInUse = pair.cert;
      metrics.certificate(pair.cert, true);
    },
    rejected: () => metrics.error('tls_reload'),
  };
  if (selfManaged) {
    selfManaged.serveWith(app.server as unknown as TlsServer, certificateObserver);
  } else if (certFile !== null && keyFile !== null) {
    certificates = watchCertificates({
      server: app.server as unknown as TlsServer,
      certFile,
      keyFile,
      current: tls,
      intervalMs: reloadIntervalMs,
      logger,
      ...certificateObserver,
    });
  }
  const signal = await signalled;
  logger.info(
    { signal, shutdownDelayMs: config.server.shutdownDelayMs },
    'shutting down: finishing in-flight requests',
  );
  certificates?.close();
  // The Lease is released at once, so another replica looks after the certificates while this one drains.
  const certificatesStopped = selfManaged?.stop();
  // Released at once, so another replica takes the self-test over while this one drains.
  const selfTestStopped = selfTest.stop();
  // Ctrl-C is someone at a terminal, not an endpoints controller that needs time to drop this pod.
  const settings = signal === 'SIGINT' ? { ...config.server, shutdownDelayMs: 0 } : config.server;
  const result = await shutDown(app, lifecycle, settings, logger);
  // The probes answer (readiness failing) until the webhook has drained.
  await Promise.all([stopWatches(), selfTestStopped, certificatesStopped, probes.close()]);
  const flushed = await logDestination.end(config.log.flushTimeoutMs);
  if (!flushed.flushed)
    io.stderr(
      `hookguard: stdout took no more log lines within log.flushTimeoutMs (${config.log.flushTimeoutMs} ms): ${flushed.unwrittenBytes} bytes of them were not written (${logDestination.dropped} lines dropped before)\n`,
    );
  return result === 'drained' ? EXIT.ok : EXIT.shutdownForced;
}
