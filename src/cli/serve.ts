import { parseArgs } from 'node:util';
import { pino } from 'pino';
import { ConfigError, loadConfig } from '../config.js';
import { startDiscovery } from '../discovery/start.js';
import { buildApp } from '../http/app.js';
import { loadTls } from '../tls.js';
import { EXIT, type CommandIO } from './io.js';

export const SERVE_USAGE = `Usage: hookguard serve [--config FILE] [--host H] [--port N] [--mode enforce|audit] [--argocd-version V]
Serves the admission webhook over HTTPS: POST /mutate, POST /validate, GET /healthz, GET /readyz.
Without server.tls.certFile/keyFile it generates a self-signed development certificate at start.`;

/** `hookguard serve`: listens until SIGTERM or SIGINT, then closes gracefully. */
export async function runServe(argv: readonly string[], io: CommandIO): Promise<number> {
  const { values } = parseArgs({
    args: [...argv],
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
  const config = loadConfig({
    file: values.config ?? io.env.HOOKGUARD_CONFIG,
    env: io.env,
    overrides: { 'server.host': values.host, 'server.port': values.port, mode: values.mode, 'argocd.version': values['argocd-version'] },
  });
  const logger = pino({ level: config.log.level, base: { service: 'hookguard' }, timestamp: pino.stdTimeFunctions.isoTime });
  const tls = await loadTls(config.server.tls);
  if (tls.generated) {
    logger.warn('no TLS certificate configured (server.tls.certFile/keyFile): generated a self-signed development certificate for localhost, valid 30 days');
  }
  const discovery = startDiscovery(config, io.env, logger);
  const app = buildApp(config, { logger, tls, argocd: discovery.source });
  try {
    await app.listen({ host: config.server.host, port: config.server.port });
  } catch (error) {
    await discovery.stop();
    throw new ConfigError('server.port', `cannot listen on ${config.server.host}:${config.server.port}: ${(error as Error).message}`);
  }
  logger.info(
    { mode: config.mode, argocdVersion: config.argocd.version ?? 'unknown', advisories: config.advisories.map((advisory) => advisory.id) },
    'hookguard ready',
  );
  await new Promise<void>((resolve) => {
    const stop = (signal: string) => {
      logger.info({ signal }, 'shutting down: finishing in-flight requests');
      void app
        .close()
        .then(() => discovery.stop())
        .then(resolve);
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
  return EXIT.ok;
}
