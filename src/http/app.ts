import Fastify, { LogController, type FastifyError, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { Logger } from 'pino';
import { auditRecord } from '../audit.js';
import { decisionContext, type Config } from '../config.js';
import { decide, type Decision, type DecisionContext } from '../core/decide.js';
import type { ArgoVersionSource } from '../discovery/discovery.js';
import type { Endpoint } from '../core/types.js';
import { errored, fromDecision } from './responses.js';
import { parseAdmissionReview } from './review.js';

export interface AppOptions {
  logger: Logger;
  /** PEM key and certificate; without them the app only answers inject() (tests). */
  tls?: { key: string; cert: string };
  /** Discovered Argo CD instances, read as a snapshot per request; without it only `argocd.version` counts. */
  argocd?: ArgoVersionSource;
}

export function buildApp(config: Readonly<Config>, options: AppOptions): FastifyInstance {
  const limitBytes = config.server.bodyLimitBytes;
  const app = Fastify({
    loggerInstance: options.logger,
    // Each admission request writes its own audit line; fastify's per-request lines would double them.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: limitBytes,
    ...(options.tls ? { https: { key: options.tls.key, cert: options.tls.cert, minVersion: 'TLSv1.2' as const } } : {}),
  }) as unknown as FastifyInstance;
  const baseContext = decisionContext(config);
  const argocd = options.argocd;
  const contextNow = (): DecisionContext => (argocd ? { ...baseContext, argocdInstances: argocd.instances() } : baseContext);

  const review = (endpoint: Endpoint) => async (request: FastifyRequest, reply: FastifyReply) => {
    const parsed = parseAdmissionReview(request.body);
    if (!parsed.ok) {
      reply.code(400);
      return { error: parsed.message };
    }
    const admission = parsed.request;
    const started = performance.now();
    let decision: Decision;
    try {
      decision = decide(admission, endpoint, contextNow());
    } catch (error) {
      const audit = auditRecord(admission, endpoint, undefined, performance.now() - started, { error });
      app.log.error({ audit, err: error }, 'rule failed; request allowed unchanged');
      return errored(admission.uid, error);
    }
    app.log.info({ audit: auditRecord(admission, endpoint, decision, performance.now() - started) }, 'admission decision');
    return fromDecision(admission.uid, decision);
  };

  app.post('/mutate', review('mutate'));
  app.post('/validate', review('validate'));
  app.get('/healthz', async () => ({ status: 'ok' }));
  // Once close() begins fastify answers every request, probes included, with 503: readiness drops by itself.
  // Discovery not synced, or the API server away, keeps it 200: admission works with the last known or an
  // unknown version, and an unready webhook would let hooks pass unguarded.
  app.get('/readyz', async () => ({ status: 'ready', ...(argocd ? { discovery: argocd.status() } : {}) }));

  app.setNotFoundHandler(async (request, reply) => {
    reply.code(404);
    return { error: `no route ${request.method} ${request.url}; hookguard serves POST /mutate, POST /validate, GET /healthz, GET /readyz` };
  });
  app.setErrorHandler(async (error: FastifyError, _request, reply) => {
    const status = error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 500;
    if (status === 500) app.log.error({ err: error }, 'unexpected error');
    reply.code(status);
    if (status === 413) return { error: `request body is larger than the ${limitBytes}-byte limit` };
    return { error: status === 500 ? 'internal error' : error.message };
  });
  return app;
}
