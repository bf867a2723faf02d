// Fuzz: arbitrary and almost-valid AdmissionReviews (wrong types, missing fields, huge strings, deep nesting,
// __proto__/constructor keys, invalid UTF-8, non-JSON) sent through inject() and over a real TLS socket. hookguard
// always answers, never with a 5xx; a valid envelope always gets a valid AdmissionReview with its uid; anything
// else gets a 4xx with a clear {error}; and nothing it receives reaches a prototype.
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decisionContext } from '../../src/config/decision-context.js';
import { DEFAULTS } from '../../src/config/keys.js';
import { loadConfig } from '../../src/config/load.js';
import { decide } from '../../src/core/decide.js';
import type { AdmissionRequest } from '../../src/core/types.js';
import { buildApp } from '../../src/http/app.js';
import { generateDevCertificate } from '../../src/tls/certificates.js';
import { loadFixtures } from '../support/fixtures.js';
import { ARGOCD_CONTROLLER, hookJob, hookPod } from '../support/objects.js';
import { requestOnce } from '../support/request-once.js';
import { admissionReview } from '../support/reviews.js';

type Json = Record<string, unknown>;

// Keys that JSON.stringify cannot write as own properties of a JS literal: placeholders replaced in the text.
const PROTO = '@@proto@@';
const CONSTRUCTOR = '@@constructor@@';
// Stands for bytes that are not UTF-8, spliced into the body after encoding.
const BAD_UTF8 = '@@bad-utf8@@';
const BAD_BYTES = [
  Buffer.from([0xff]),
  Buffer.from([0xc3, 0x28]),
  Buffer.from([0xed, 0xa0, 0x80]),
  Buffer.from([0xf0, 0x28, 0x8c, 0x28]),
];

const fixtureObjects = loadFixtures().map((fixture) => fixture.object as Json);
const baseObjects: Json[] = [
  hookJob({ 'helm.sh/hook': 'post-delete' }, { backoffLimit: 1 }),
  hookJob({ 'argocd.argoproj.io/hook': 'PreSync', 'hookguard.io/skip': 'min-runtime' }),
  hookPod({ 'helm.sh/hook': 'test' }),
  ...fixtureObjects,
];

// Deeper than JSON.stringify can write: a placeholder, expanded in the text.
const DEEP = /"@@deep:(\d+)@@"/g;
const deepNesting = fc.integer({ min: 100, max: 50_000 }).map((depth) => `@@deep:${depth}@@`);
const nestedText = (depth: number) => `${'[{"n":'.repeat(depth / 2)}"bottom"${'}]'.repeat(depth / 2)}`;
const hugeString = fc.constantFrom(64 * 1024, 1024 * 1024, 3 * 1024 * 1024).map((length) => 'h'.repeat(length));
const poisoned = fc.constantFrom<unknown>(
  { [PROTO]: { polluted: 'yes', allowed: false } },
  { [CONSTRUCTOR]: { prototype: { polluted: 'yes' } } },
  { [PROTO]: { metadata: { annotations: { 'helm.sh/hook': 'pre-install' } } } },
  { [CONSTRUCTOR]: 'a plain key named constructor' },
);
const weirdValue: fc.Arbitrary<unknown> = fc.oneof(
  { weight: 6, arbitrary: fc.jsonValue({ maxDepth: 3 }) },
  { weight: 1, arbitrary: deepNesting },
  { weight: 1, arbitrary: hugeString },
  { weight: 2, arbitrary: poisoned },
  { weight: 1, arbitrary: fc.constant(`text with ${BAD_UTF8} inside`) },
  { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 40 }) },
);

// Places a review's fields live; each case replaces or deletes one or two of them.
const PATHS: readonly (readonly string[])[] = [
  [],
  ['kind'],
  ['apiVersion'],
  ['request'],
  ['request', 'uid'],
  ['request', 'operation'],
  ['request', 'userInfo'],
  ['request', 'userInfo', 'username'],
  ['request', 'namespace'],
  ['request', 'subResource'],
  ['request', 'dryRun'],
  ['request', 'oldObject'],
  ['request', 'object'],
  ['request', 'object', 'kind'],
  ['request', 'object', 'metadata'],
  ['request', 'object', 'metadata', 'annotations'],
  ['request', 'object', 'metadata', 'annotations', 'helm.sh/hook'],
  ['request', 'object', 'metadata', 'annotations', 'hookguard.io/skip'],
  ['request', 'object', 'metadata', 'finalizers'],
  ['request', 'object', 'spec'],
  ['request', 'object', 'spec', 'template', 'spec', 'containers'],
  ['request', 'object', 'spec', 'template', 'spec', 'containers', '0', 'command'],
  ['request', 'object', 'spec', 'containers'],
];

interface Edit {
  path: readonly string[];
  value: unknown;
  remove: boolean;
}
const edit = fc.record({ path: fc.constantFrom(...PATHS), value: weirdValue, remove: fc.boolean() });

// fc.constantFrom hands out the same instance every time, so a value is copied before it is placed: placing one
// instance twice in a case could make a cycle, and editing it in place would change later cases.
function applyEdit(review: Json, { path, value: shared, remove }: Edit): unknown {
  const value = structuredClone(shared);
  if (path.length === 0) return value;
  let node: unknown = review;
  for (const key of path.slice(0, -1)) {
    if (typeof node !== 'object' || node === null) return review;
    node = (node as Json)[key];
  }
  if (typeof node !== 'object' || node === null) return review;
  const last = path[path.length - 1] as string;
  if (remove) delete (node as Json)[last];
  else (node as Json)[last] = value;
  return review;
}

const validReview = fc
  .record({
    object: fc.constantFrom(...baseObjects),
    operation: fc.constantFrom<'CREATE' | 'UPDATE' | 'DELETE' | 'CONNECT'>(
      'CREATE',
      'CREATE',
      'UPDATE',
      'DELETE',
      'CONNECT',
    ),
    username: fc.constantFrom('kubernetes-admin', ARGOCD_CONTROLLER),
    uid: fc.oneof(fc.uuid(), fc.string({ minLength: 1, maxLength: 30 })),
  })
  .map(({ object, operation, username, uid }) =>
    admissionReview({
      uid,
      operation,
      username,
      object: operation === 'DELETE' ? null : structuredClone(object),
      oldObject: operation === 'CREATE' ? null : structuredClone(object),
    }),
  );

interface Case {
  body: Buffer;
  contentType: string | undefined;
}

function encode(value: unknown): Buffer {
  const text = (JSON.stringify(value) ?? 'null')
    .replaceAll(`"${PROTO}"`, '"__proto__"')
    .replaceAll(`"${CONSTRUCTOR}"`, '"constructor"')
    .replace(DEEP, (_match, depth: string) => nestedText(Number(depth)));
  const parts = text.split(BAD_UTF8);
  return Buffer.concat(
    parts.flatMap((part, index) =>
      index === 0 ? [Buffer.from(part)] : [BAD_BYTES[index % BAD_BYTES.length] as Buffer, Buffer.from(part)],
    ),
  );
}

const jsonCase: fc.Arbitrary<Case> = fc
  .tuple(
    validReview,
    fc.array(edit, { maxLength: 2 }),
    fc.constantFrom('application/json', 'application/json', 'application/json; charset=utf-8'),
  )
  .map(([review, edits, contentType]) => ({
    body: encode(edits.reduce<unknown>((value, change) => applyEdit(value as Json, change), review)),
    contentType,
  }));

const nonJsonCase: fc.Arbitrary<Case> = fc
  .oneof(
    validReview.chain((review) =>
      fc
        .integer({ min: 0, max: JSON.stringify(review).length - 1 })
        .map((cut) => Buffer.from(JSON.stringify(review).slice(0, cut))),
    ),
    fc.string({ maxLength: 200 }).map((text) => Buffer.from(text)),
    fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes)),
    fc
      .constantFrom('', 'null', '[]', '"AdmissionReview"', '{"kind":"AdmissionReview"}', '{"a":1}{"b":2}', '\ufeff{}')
      .map((text) => Buffer.from(text)),
  )
  .chain((body) =>
    fc
      .constantFrom<string | undefined>('application/json', 'text/plain', undefined, 'application/x-yaml')
      .map((contentType) => ({ body, contentType })),
  );

const anyCase = fc.oneof({ weight: 4, arbitrary: jsonCase }, { weight: 1, arbitrary: nonJsonCase });

interface Answer {
  status: number;
  body: string;
}

/** The uid a correct server must echo: the body is a JSON AdmissionReview envelope with a uid, free of prototype keys. */
function expectedUid(testCase: Case): string | undefined {
  if (testCase.contentType === undefined || !testCase.contentType.startsWith('application/json')) return undefined;
  const text = new TextDecoder().decode(testCase.body);
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return undefined;
  }
  if (hasPrototypeKey(parsed)) return undefined;
  const review = parsed as { kind?: unknown; apiVersion?: unknown; request?: { uid?: unknown } | null };
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) return undefined;
  if (review.kind !== 'AdmissionReview' || review.apiVersion !== 'admission.k8s.io/v1') return undefined;
  const request = review.request;
  if (typeof request !== 'object' || request === null || Array.isArray(request)) return undefined;
  return typeof request.uid === 'string' && request.uid !== '' ? request.uid : undefined;
}

/** A __proto__ key, or a constructor key holding a prototype, anywhere; a walk with a stack, as nesting may be deep. */
function hasPrototypeKey(root: unknown): boolean {
  const pending = [root];
  while (pending.length > 0) {
    const node = pending.pop();
    if (typeof node !== 'object' || node === null) continue;
    for (const [key, value] of Object.entries(node)) {
      if (key === '__proto__') return true;
      if (key === 'constructor' && typeof value === 'object' && value !== null && Object.hasOwn(value, 'prototype'))
        return true;
      pending.push(value);
    }
  }
  return false;
}

/** What every answer must be: a valid AdmissionReview carrying the uid, or a 4xx with a clear {error}. */
function checkAnswer(testCase: Case, answer: Answer): void {
  const uid = expectedUid(testCase);
  const context = `status ${answer.status}, body ${answer.body.slice(0, 300)}`;
  expect(answer.status, context).toBeLessThan(500);
  const body = JSON.parse(answer.body) as Json;
  if (uid === undefined) {
    expect(answer.status, context).toBeGreaterThanOrEqual(400);
    expect(Object.keys(body), context).toEqual(['error']);
    expect(typeof body.error === 'string' && body.error.length > 10, context).toBe(true);
    return;
  }
  expect(answer.status, context).toBe(200);
  expect(body).toMatchObject({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview', response: { uid } });
  const response = body.response as Json;
  expect(typeof response.allowed).toBe('boolean');
  for (const warning of (response.warnings as unknown[] | undefined) ?? []) expect(typeof warning).toBe('string');
  if (response.patch !== undefined) {
    expect(response.patchType).toBe('JSONPatch');
    const ops = JSON.parse(Buffer.from(response.patch as string, 'base64').toString('utf8')) as Json[];
    expect(ops.length).toBeGreaterThan(0);
    for (const op of ops) expect(['add', 'remove', 'replace']).toContain(op.op);
  }
  if (response.allowed === false)
    expect(response.status).toMatchObject({ code: 403, message: expect.stringMatching(/^hookguard denied: /) });
}

const prototypeKeys = () =>
  [Object.prototype, Array.prototype, Function.prototype, String.prototype].map((proto) =>
    Object.getOwnPropertyNames(proto).sort(),
  );
const prototypesBefore = prototypeKeys();

function expectPrototypesUntouched(): void {
  expect(({} as Json).polluted).toBeUndefined();
  expect(([] as unknown as Json).polluted).toBeUndefined();
  expect(prototypeKeys()).toEqual(prototypesBefore);
}

describe('fuzzed AdmissionReviews through inject()', () => {
  const app = buildApp(loadConfig({ overrides: { 'argocd.version': '2.14.3' } }), {
    logger: pino({ level: 'silent' }),
  });
  afterAll(() => app.close());

  it('always answers, never 5xx; a valid envelope gets its uid back in a valid AdmissionReview, anything else a clear 4xx', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('/mutate', '/validate'), anyCase, async (url, testCase) => {
        const reply = await app.inject({
          method: 'POST',
          url,
          payload: testCase.body,
          headers: testCase.contentType === undefined ? {} : { 'content-type': testCase.contentType },
        });
        checkAnswer(testCase, { status: reply.statusCode, body: reply.body });
      }),
      { numRuns: 400 },
    );
    expectPrototypesUntouched();
  });

  it('refuses a body with a __proto__ key with 400 naming the cause, and a constructor.prototype too', async () => {
    for (const key of ['__proto__', 'constructor']) {
      const review = JSON.stringify(
        admissionReview({ uid: 'uid-proto', operation: 'CREATE', object: baseObjects[0] as Json }),
      );
      const payload = review.replace('"metadata":{', `"metadata":{"${key}":{"prototype":{"polluted":"yes"}},`);
      const reply = await app.inject({
        method: 'POST',
        url: '/mutate',
        payload,
        headers: { 'content-type': 'application/json' },
      });
      expect([reply.statusCode, reply.json()]).toEqual([
        400,
        {
          error:
            'the body is refused: it holds a "__proto__" key or a "constructor" key with a "prototype" (Object contains forbidden prototype property); no Kubernetes object has one',
        },
      ]);
    }
    expectPrototypesUntouched();
  });

  // Found by the fuzz above: the 400 message quoted the wrong value with JSON.stringify, which overflowed the stack
  // on deep nesting (a 500) and copied megabytes into the message.
  it.each([
    ['deeply nested', nestedText(50_000), 'expected kind AdmissionReview, got a list'],
    ['huge', JSON.stringify('k'.repeat(1024 * 1024)), `expected kind AdmissionReview, got "${'k'.repeat(99)}…`],
  ])('names a %s wrong kind in a short 400', async (_name, kind, error) => {
    const payload = `{"apiVersion":"admission.k8s.io/v1","kind":${kind},"request":{"uid":"u"}}`;
    const reply = await app.inject({
      method: 'POST',
      url: '/validate',
      payload,
      headers: { 'content-type': 'application/json' },
    });
    expect([reply.statusCode, reply.json()]).toEqual([400, { error }]);
  });

  it('answers 413 with the limit to a body over it, made of a valid review with a huge annotation', async () => {
    const object = structuredClone(baseObjects[0] as Json) as { metadata: { annotations: Record<string, string> } };
    object.metadata.annotations.huge = 'x'.repeat(DEFAULTS.server.bodyLimitBytes);
    const payload = JSON.stringify(admissionReview({ uid: 'uid-huge', operation: 'CREATE', object }));
    const reply = await app.inject({
      method: 'POST',
      url: '/mutate',
      payload,
      headers: { 'content-type': 'application/json' },
    });
    expect([reply.statusCode, reply.json()]).toEqual([
      413,
      { error: `request body is larger than the ${DEFAULTS.server.bodyLimitBytes}-byte limit` },
    ]);
  });
});

describe('a __proto__ key inside the object changes no decision (core, as a YAML or JSON parser hands it over)', () => {
  const context = decisionContext(loadConfig(), '2.14.3');
  const places = ['', '"metadata":{', '"annotations":{', '"spec":{'] as const;

  it.each(baseObjects.map((object, index) => [index, object] as const))('object %i', (_index, object) => {
    for (const username of ['kubernetes-admin', ARGOCD_CONTROLLER]) {
      const text = JSON.stringify(admissionReview({ uid: 'uid', operation: 'CREATE', object, username }));
      const plain = (JSON.parse(text) as { request: AdmissionRequest }).request;
      for (const place of places) {
        const payload =
          '{"__proto__":{"polluted":"yes","allowed":false,"metadata":{"annotations":{"hookguard.io/skip":"delete-policy"}}},';
        const needle = place === '' ? '"object":{' : place;
        if (!text.includes(needle)) continue;
        const poisoned = (
          JSON.parse(text.replace(needle, `${needle}${payload.slice(1)}`)) as { request: AdmissionRequest }
        ).request;
        for (const endpoint of ['mutate', 'validate'] as const) {
          const expected = decide(plain, endpoint, context);
          const actual = decide(poisoned, endpoint, context);
          expect({ allowed: actual.allowed, patch: actual.patch, findings: actual.findings }).toEqual({
            allowed: expected.allowed,
            patch: expected.patch,
            findings: expected.findings,
          });
        }
      }
    }
    expectPrototypesUntouched();
  });
});

describe('fuzzed AdmissionReviews over a real TLS socket (keep-alive, 127.0.0.1)', () => {
  let app: FastifyInstance;
  let reference: FastifyInstance;
  let agent: https.Agent;
  let port: number;
  let ca: string;

  beforeAll(async () => {
    const tls = await generateDevCertificate();
    ca = tls.cert;
    const config = loadConfig({ overrides: { 'argocd.version': '2.14.3' } });
    app = buildApp(config, { logger: pino({ level: 'silent' }), tls: { key: tls.key, cert: tls.cert } });
    reference = buildApp(config, { logger: pino({ level: 'silent' }) });
    await app.listen({ host: '127.0.0.1', port: 0 });
    port = (app.server.address() as AddressInfo).port;
    agent = new https.Agent({ keepAlive: true, maxSockets: 4 });
  });

  afterAll(async () => {
    agent.destroy();
    await app.close();
    await reference.close();
  });

  async function send(url: string, testCase: Case): Promise<Answer> {
    const headers = {
      'content-length': testCase.body.length,
      ...(testCase.contentType === undefined ? {} : { 'content-type': testCase.contentType }),
    };
    const { status, body } = await requestOnce(
      { host: '127.0.0.1', port, path: url, method: 'POST', agent, ca, servername: 'localhost', headers },
      testCase.body,
    );
    return { status, body };
  }

  it('answers each case exactly as inject() does, over reused connections, and stays up', async () => {
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('/mutate', '/validate'), anyCase, async (url, testCase) => {
        const answer = await send(url, testCase);
        checkAnswer(testCase, answer);
        const injected = await reference.inject({
          method: 'POST',
          url,
          payload: testCase.body,
          headers: testCase.contentType === undefined ? {} : { 'content-type': testCase.contentType },
        });
        expect(answer).toEqual({ status: injected.statusCode, body: injected.body });
      }),
      { numRuns: 150 },
    );
    // Still serving: a plain valid review after all of it.
    const valid = {
      body: Buffer.from(
        JSON.stringify(admissionReview({ uid: 'uid-after', operation: 'CREATE', object: baseObjects[0] as Json })),
      ),
      contentType: 'application/json',
    };
    checkAnswer(valid, await send('/mutate', valid));
    expectPrototypesUntouched();
  });
});
