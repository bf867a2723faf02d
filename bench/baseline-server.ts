// The baseline: what any fastify HTTPS webhook pays before doing real work. Same TLS settings, body limit,
// JSON body parsing, envelope check and logger setup as hookguard; it answers `allowed: true` with the uid and
// writes one short info line per request (hookguard writes one audit line per decision at its default level).
// It parses each body as it arrives, as a plain fastify webhook does; with --batched it parses and answers the
// requests of one turn of the event loop together, through hookguard's own TurnBatch (src/http/turn-batch.ts), so
// that a run can tell hookguard's own work from what the batches save (`npm run bench -- --batched-baseline`).
// Run by `npm run bench`: node dist-bench/bench/baseline-server.js PORT CERT_FILE KEY_FILE [--batched]
import { readFileSync } from 'node:fs';
import Fastify, { LogController, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { pino } from 'pino';
import { fromDist } from './built.js';

type ConfigKeysModule = typeof import('../src/config/keys.js');
type ReviewModule = typeof import('../src/http/review.js');
type TurnBatchModule = typeof import('../src/http/turn-batch.js');
type JsonBodyModule = typeof import('../src/http/json-body.js');

const [port, certFile, keyFile, mode] = process.argv.slice(2);
if (port === undefined || certFile === undefined || keyFile === undefined || (mode ?? '--batched') !== '--batched') {
  process.stderr.write('usage: baseline-server PORT CERT_FILE KEY_FILE [--batched]\n');
  process.exit(2);
}
const { DEFAULTS } = await fromDist<ConfigKeysModule>('config/keys.js');
const { parseAdmissionReview } = await fromDist<ReviewModule>('http/review.js');
const { TurnBatch } = await fromDist<TurnBatchModule>('http/turn-batch.js');
const { parseJsonBodiesIn } = await fromDist<JsonBodyModule>('http/json-body.js');

const logger = pino({
  level: DEFAULTS.log.level,
  base: { service: 'baseline' },
  timestamp: pino.stdTimeFunctions.isoTime,
});
const app = Fastify({
  loggerInstance: logger,
  logController: new LogController({ disableRequestLogging: true }),
  bodyLimit: DEFAULTS.server.bodyLimitBytes,
  https: { key: readFileSync(keyFile, 'utf8'), cert: readFileSync(certFile, 'utf8'), minVersion: 'TLSv1.2' as const },
}) as unknown as FastifyInstance;

const answer = (endpoint: string, request: FastifyRequest, reply: FastifyReply) => {
  const parsed = parseAdmissionReview(request.body);
  if (!parsed.ok) {
    reply.code(400);
    return { error: parsed.message };
  }
  const { uid } = parsed.request;
  app.log.info({ uid, endpoint }, 'admission request');
  return { apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid, allowed: true } };
};
if (mode === '--batched') {
  const batch = new TurnBatch((error) => app.log.error({ err: error }, 'unexpected error'));
  parseJsonBodiesIn(app, batch);
  for (const endpoint of ['mutate', 'validate'] as const)
    app.post(`/${endpoint}`, (request, reply) => batch.run(() => answer(endpoint, request, reply)));
} else {
  for (const endpoint of ['mutate', 'validate'] as const)
    app.post(`/${endpoint}`, async (request, reply) => answer(endpoint, request, reply));
}
app.get('/healthz', async () => ({ status: 'ok' }));
await app.listen({ host: '127.0.0.1', port: Number(port) });
process.once('SIGTERM', () => void app.close());
