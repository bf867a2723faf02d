// The JSON body parser: Fastify's own, with the cause kept. Fastify answers every JSON failure with one message
// ("Body is not valid JSON…"), even for valid JSON refused because of a __proto__ key; this one says which it was.
import secureJson from 'secure-json-parse';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { BodyError } from '../errors.js';
import type { TurnBatch } from './turn-batch.js';

const POISONING = /forbidden prototype property/;

/** Parses like Fastify does (secure-json-parse, __proto__ and constructor.prototype refused) and names the problem. */
export function parseJsonBody(
  _request: FastifyRequest,
  body: string,
  done: (error: Error | null, value?: unknown) => void,
): void {
  if (body.length === 0) {
    done(new BodyError('the body is empty; expected an AdmissionReview JSON object'));
    return;
  }
  try {
    done(null, secureJson.parse(body, undefined, { protoAction: 'error', constructorAction: 'error' }));
  } catch (error) {
    const cause = (error as Error).message;
    done(
      new BodyError(
        POISONING.test(cause)
          ? `the body is refused: it holds a "__proto__" key or a "constructor" key with a "prototype" (${cause}); no Kubernetes object has one`
          : `the body is not valid JSON: ${cause}`,
      ),
    );
  }
}

/** Makes parseJsonBody the app's JSON parser, each parse run with the others of its turn in `batch`. */
export function parseJsonBodiesIn(app: FastifyInstance, batch: TurnBatch): void {
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) =>
    batch.defer(() => parseJsonBody(request, body as string, done)),
  );
}
