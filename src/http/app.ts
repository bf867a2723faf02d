import Fastify, {
  LogController,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import type { Logger } from 'pino';
import { auditLineWriter, auditRecord } from './audit.js';
import { decisionContext } from '../config/decision-context.js';
import type { Config } from '../config/keys.js';
import type { DecisionContext } from '../core/context.js';
import { decide, type Decision } from '../core/decide.js';
import { withCluster, withHelmControllers, withInstances, withNamespaces } from '../core/context.js';
import type { ArgoVersionSource } from '../discovery/discovery.js';
import type { HelmControllerSource } from '../discovery/helm-controllers.js';
import type { ClusterSource } from '../discovery/api-groups.js';
import type { NamespaceSource } from '../discovery/namespaces.js';
import type { AdmissionRequest, Endpoint } from '../core/types.js';
import { isSelfTestProbe, VALIDATING_MARKER } from '../controllers/selftest/probe.js';
import type { SelfTestStatus } from '../controllers/selftest/start.js';
import { secureContextOptions, type KeyPair } from '../tls/certificates.js';
import type { Lifecycle } from './lifecycle.js';
import { fastifyLimits, guardConnections, httpLimits, tlsLimits } from './limits.js';
import { Metrics, type Outcome } from './metrics.js';
import { parseJsonBodiesIn } from './json-body.js';
import { errored, fromDecision, type AdmissionResponse } from './responses.js';
import { parseAdmissionReview } from './review.js';
import { TurnBatch } from './turn-batch.js';

export interface AppOptions {
  logger: Logger;
  /** PEM key and certificate; without them the app only answers inject() (tests). */
  tls?: KeyPair;
  /** Discovered Argo CD instances, read as a snapshot per request; without it only `argocd.version` counts. */
  argocd?: ArgoVersionSource;
  /** Discovered Flux helm-controllers (or the configured one), read as a snapshot per request. */
  flux?: HelmControllerSource;
  /** The namespace watch's facts, read as a snapshot per request; without it no rule knows a namespace. */
  namespaces?: NamespaceSource;
  /** What API discovery knows of the cluster (OpenShift or not). */
  cluster?: ClusterSource;
  /** Served at GET /metrics; without it the app keeps metrics of its own (no process metrics). */
  metrics?: Metrics;
  /** Shutdown state: /readyz fails and answers close their connection once it is shutting down. */
  lifecycle?: Lifecycle;
  /**
   * The self-test: its state for /readyz, and the username its probe's requests come from (hookguard's own). Those
   * requests are decided as any other, but not counted in the admission metrics, and log a debug line, not an
   * audit line.
   */
  selfTest?: { status(): SelfTestStatus; probeUsername: string | undefined };
}

const WEBHOOK_ROUTES = new Set(['/mutate', '/validate']);

export function buildApp(config: Readonly<Config>, options: AppOptions): FastifyInstance {
  const limitBytes = config.server.bodyLimitBytes;
  const metrics = options.metrics ?? new Metrics();
  const lifecycle = options.lifecycle;
  const app = Fastify({
    loggerInstance: options.logger,
    // Each admission request writes its own audit line; fastify's per-request lines would double them.
    logController: new LogController({ disableRequestLogging: true }),
    ...fastifyLimits(config.server),
    // A request that reached us while closing is answered, not refused: the API server would not retry it.
    return503OnClosing: false,
    ...(options.tls ? { https: { ...secureContextOptions(options.tls), ...tlsLimits(config.server) } } : {}),
  }) as unknown as FastifyInstance;
  if (options.tls)
    guardConnections(app.server, config.server, {
      tls: true,
      closed: (reason) => metrics.connectionClosed('webhook', reason),
    });
  const baseContext = decisionContext(config);
  const auditDetail = config.log.auditDetail;
  const writeAuditLine = auditLineWriter(options.logger, 'admission decision');
  const argocd = options.argocd;
  const flux = options.flux;
  const probeUsername = options.selfTest?.probeUsername;
  const namespaceSource = options.namespaces;
  const clusterSource = options.cluster;
  // Rebuilt only when discovery, the namespace watch or API discovery publishes a new snapshot: a request pays three
  // comparisons.
  let context = baseContext;
  const contextNow = (): DecisionContext => {
    const instances = argocd?.instances() ?? context.argocdInstances;
    const namespaces = namespaceSource?.namespaces();
    const cluster = clusterSource?.cluster();
    const helmControllers = flux?.helmControllers() ?? context.helmControllers;
    if (
      instances !== context.argocdInstances ||
      namespaces !== context.namespaces ||
      cluster !== context.cluster ||
      helmControllers !== context.helmControllers
    )
      context = withHelmControllers(
        withCluster(withNamespaces(withInstances(baseContext, instances), namespaces), cluster),
        helmControllers,
      );
    return context;
  };
  // Bodies and decisions are worked out per turn of the event loop, back to back (src/http/turn-batch.ts).
  const batch = new TurnBatch((error) => {
    app.log.error({ err: error }, 'unexpected error');
    metrics.error('http');
  });
  parseJsonBodiesIn(app, batch);

  // received: when the handler was called, so that the latency observed includes the wait for the batch.
  const answerReview = (endpoint: Endpoint, request: FastifyRequest, reply: FastifyReply, received: number) => {
    const seconds = () => (performance.now() - received) / 1000;
    if (lifecycle?.shuttingDown) reply.header('connection', 'close');
    const parsed = parseAdmissionReview(request.body);
    if (!parsed.ok) {
      metrics.request(endpoint, 'bad_request', seconds());
      reply.code(400);
      return { error: parsed.message };
    }
    const admission = parsed.request;
    try {
      return answerAdmission(endpoint, admission, seconds);
    } catch (error) {
      // The answer could not be built (the response builder, or the failure path of a rule that threw): the
      // request is allowed unchanged, as for a rule that throws, with its uid (docs/server.md, "When hookguard fails").
      return answerFailed(endpoint, admission.uid, error, seconds);
    }
  };
  const answerAdmission = (endpoint: Endpoint, admission: AdmissionRequest, seconds: () => number) => {
    // One comparison of the username for every other request.
    const probe = probeUsername !== undefined && isSelfTestProbe(admission, probeUsername);
    const started = performance.now();
    let decision: Decision;
    try {
      decision = decide(admission, endpoint, contextNow());
    } catch (error) {
      const audit = auditRecord(admission, endpoint, undefined, performance.now() - started, auditDetail, { error });
      app.log.error({ audit, err: error, selfTest: probe || undefined }, 'rule failed; request allowed unchanged');
      metrics.error('rule');
      if (!probe) metrics.request(endpoint, 'errored', seconds());
      return errored(admission.uid, error);
    }
    const answer = fromDecision(admission.uid, decision);
    // The evidence that the API server called this webhook, which a validating one can give by no change.
    if (probe && endpoint === 'validate')
      answer.response.warnings = [...(answer.response.warnings ?? []), VALIDATING_MARKER];
    try {
      recordDecision(endpoint, admission, decision, answer.response, probe, performance.now() - started, seconds);
    } catch (error) {
      // The decision was made and its answer built: a failing audit line or metric does not change it.
      reportSafely(() => {
        app.log.error({ err: error, uid: admission.uid }, 'recording the decision failed; answered as decided');
        metrics.error('answer');
      });
    }
    return answer;
  };
  const recordDecision = (
    endpoint: Endpoint,
    admission: AdmissionRequest,
    decision: Decision,
    response: AdmissionResponse,
    probe: boolean,
    durationMs: number,
    seconds: () => number,
  ): void => {
    if (probe) {
      // A debug line, read when the self-test is in doubt: it says everything, whatever log.auditDetail says.
      app.log.debug(
        { selfTest: auditRecord(admission, endpoint, decision, durationMs, 'full') },
        'self-test probe decided',
      );
      return;
    }
    writeAuditLine(auditRecord(admission, endpoint, decision, durationMs, auditDetail));
    metrics.request(endpoint, outcomeOf(response), seconds(), decision.findings, decision.optOuts);
  };
  const answerFailed = (endpoint: Endpoint, uid: string, error: unknown, seconds: () => number) => {
    reportSafely(() => {
      app.log.error({ err: error, uid, endpoint }, 'answer failed; request allowed unchanged');
      metrics.error('answer');
      metrics.request(endpoint, 'errored', seconds());
    });
    return errored(uid, error);
  };
  const review = (endpoint: Endpoint) => (request: FastifyRequest, reply: FastifyReply) => {
    const received = performance.now();
    return batch.run(() => answerReview(endpoint, request, reply, received));
  };

  app.post('/mutate', review('mutate'));
  app.post('/validate', review('validate'));
  probeRoutes(app, { ...options, metrics });

  app.setNotFoundHandler(notFound('POST /mutate, POST /validate, GET /healthz, GET /readyz, GET /metrics'));
  app.setErrorHandler(async (error: FastifyError, request, reply) => {
    const status =
      error.statusCode !== undefined && error.statusCode >= 400 && error.statusCode < 500 ? error.statusCode : 500;
    if (status === 500) {
      app.log.error({ err: error }, 'unexpected error');
      metrics.error('http');
    }
    const route = request.routeOptions.url;
    // An unparsable or oversized body never reached the handler: count it with the webhook's bad requests.
    if (status < 500 && route !== undefined && WEBHOOK_ROUTES.has(route)) {
      metrics.request(route.slice(1) as Endpoint, 'bad_request', undefined);
    }
    reply.code(status);
    if (status === 413) return { error: `request body is larger than the ${limitBytes}-byte limit` };
    return { error: status === 500 ? 'internal error' : error.message };
  });
  return app;
}

export type ProbeOptions = Pick<
  AppOptions,
  'logger' | 'argocd' | 'flux' | 'namespaces' | 'cluster' | 'lifecycle' | 'selfTest'
> & {
  metrics: Metrics;
};

/**
 * The plain-HTTP listener of `server.probePort`: /healthz, /readyz and /metrics apart from the webhook's TLS port,
 * as controller-runtime separates webhook, health and metrics servers, so that connections hoarding the webhook port
 * cannot fail the kubelet's probes. It shares the webhook's metrics and shutdown state.
 */
export function buildProbeApp(config: Readonly<Config>, options: ProbeOptions): FastifyInstance {
  const app = Fastify({
    loggerInstance: options.logger,
    logController: new LogController({ disableRequestLogging: true }),
    ...fastifyLimits(config.server),
    http: httpLimits(config.server),
    return503OnClosing: false,
  }) as unknown as FastifyInstance;
  // The same limits as the webhook's port: it listens on every address too (issue 25).
  guardConnections(app.server, config.server, {
    tls: false,
    closed: (reason) => options.metrics.connectionClosed('probe', reason),
  });
  probeRoutes(app, options);
  app.setNotFoundHandler(notFound('GET /healthz, GET /readyz, GET /metrics'));
  return app;
}

function probeRoutes(app: FastifyInstance, options: ProbeOptions): void {
  const { argocd, lifecycle, metrics } = options;
  const namespaceSource = options.namespaces;
  app.get('/healthz', async () => ({ status: 'ok' }));
  // Discovery or the namespace watch not synced, or the API server away, keeps it 200: admission works with the last
  // known or an unknown version, and an unready webhook would let hooks pass unguarded. Only shutting down makes it 503.
  app.get('/readyz', async (_request, reply) => {
    const details = {
      ...(argocd ? { discovery: argocd.status() } : {}),
      ...(options.flux ? { flux: options.flux.status() } : {}),
      ...(namespaceSource ? { namespaces: namespaceSource.status() } : {}),
      ...(options.cluster ? { apiDiscovery: options.cluster.status() } : {}),
      ...(options.selfTest ? { selfTest: options.selfTest.status() } : {}),
    };
    if (!lifecycle?.shuttingDown) return { status: 'ready', ...details };
    reply.code(503).header('connection', 'close');
    return { status: 'shutting down', ...details };
  });
  app.get('/metrics', async (_request, reply) => {
    const { contentType, text } = await metrics.exposition();
    reply.type(contentType);
    return text;
  });
}

function notFound(routes: string) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    reply.code(404);
    return { error: `no route ${request.method} ${request.url}; hookguard serves ${routes}` };
  };
}

/** Runs what reports a failure; a report that fails in turn (a broken logger or metric) changes no answer. */
function reportSafely(report: () => void): void {
  try {
    report();
  } catch {
    // Nothing is left that could say so; the answer still goes out.
  }
}

export function outcomeOf(response: { allowed: boolean; patch?: string }): Outcome {
  if (!response.allowed) return 'denied';
  return response.patch === undefined ? 'allowed' : 'patched';
}
