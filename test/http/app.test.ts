import { Writable } from 'node:stream';
import { applyPatch } from '../../src/core/json-patch.js';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import secureJson from 'secure-json-parse';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { buildApp } from '../../src/http/app.js';
import type { AdmissionResponse, AdmissionReviewResponse } from '../../src/http/responses.js';
import { idempotentCleanup } from '../../src/rules/idempotent-cleanup.js';
import { ARGOCD_CONTROLLER, HOOK_FINALIZER, hookJob } from '../support/objects.js';
import { admissionReview, decodePatch } from '../support/reviews.js';

/** What JSON.parse says of a text, as this Node.js says it. */
function jsonSyntaxMessage(text: string): string {
  try {
    JSON.parse(text);
  } catch (error) {
    return (error as Error).message;
  }
  throw new Error(`${text} is valid JSON`);
}

const BODY_LIMIT = 7 * 1024 * 1024;

type Json = Record<string, unknown>;
type LogLine = Json & { level: number; msg: string; audit?: Json };

/** An app whose log lines (audit lines included) land in `lines`, parsed, and in `written`, as written. */
function harness(overrides: Record<string, unknown> = {}): {
  app: FastifyInstance;
  lines: LogLine[];
  written: string[];
} {
  const lines: LogLine[] = [];
  const written: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString('utf8').split('\n'))
        if (line !== '') {
          written.push(line);
          lines.push(JSON.parse(line) as LogLine);
        }
      callback();
    },
  });
  const app = buildApp(loadConfig({ overrides }), { logger: pino({ level: 'info' }, sink) });
  return { app, lines, written };
}

const auditLines = (lines: readonly LogLine[]) => lines.filter((line) => line.audit !== undefined);

/** A Helm post-delete hook with no delete policy, a non-idempotent kubectl delete, too few retries and no deadline. */
function cleanupJob(): Json {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: { name: 'cleanup', namespace: 'apps', annotations: { 'helm.sh/hook': 'post-delete' } },
    spec: {
      backoffLimit: 1,
      template: {
        spec: {
          restartPolicy: 'Never',
          containers: [
            { name: 'main', image: 'bitnami/kubectl:1.31', command: ['kubectl', 'delete', 'configmap', 'x'] },
          ],
        },
      },
    },
  };
}

/** What the API server stores after applying the patch, written out by hand. */
function cleanupJobPatched(): Json {
  return {
    apiVersion: 'batch/v1',
    kind: 'Job',
    metadata: {
      name: 'cleanup',
      namespace: 'apps',
      annotations: { 'helm.sh/hook': 'post-delete' },
      labels: { 'hookguard.io/hook': 'admitted' },
    },
    spec: {
      backoffLimit: 3,
      ttlSecondsAfterFinished: 86400,
      template: {
        spec: {
          restartPolicy: 'Never',
          containers: [
            {
              name: 'main',
              image: 'bitnami/kubectl:1.31',
              command: ['kubectl', 'delete', 'configmap', 'x', '--ignore-not-found'],
              terminationMessagePolicy: 'FallbackToLogsOnError',
            },
          ],
        },
      },
    },
  };
}

// No delete policy at admission (Helm reads it from the rendered release only): the Job gets a TTL instead.
const CLEANUP_PATCH = [
  { op: 'add', path: '/spec/template/spec/containers/0/command/4', value: '--ignore-not-found' },
  { op: 'add', path: '/spec/template/spec/containers/0/terminationMessagePolicy', value: 'FallbackToLogsOnError' },
  { op: 'replace', path: '/spec/backoffLimit', value: 3 },
  { op: 'add', path: '/spec/ttlSecondsAfterFinished', value: 86400 },
  { op: 'add', path: '/metadata/labels', value: { 'hookguard.io/hook': 'admitted' } },
];

// hook-deadline sets no deadline by default: it names the missing one.
const DEADLINE_MESSAGE = 'no spec.activeDeadlineSeconds: if its Pod never starts, this hook waits forever';
const DEADLINE_WARNING = `hookguard [hook-deadline]: ${DEADLINE_MESSAGE}`;

const HOOK_TTL_MESSAGE =
  'set spec.ttlSecondsAfterFinished to 86400: no delete policy removes this Job once it succeeds. ' +
  "Fix in its chart: add helm.sh/hook-delete-policy: before-hook-creation,hook-succeeded to the template's metadata.annotations";

const HOOK_LABEL_MESSAGE = "set label hookguard.io/hook: admitted: hookguard's hook watcher follows it";
const MESSAGE_POLICY_MESSAGE =
  'set terminationMessagePolicy FallbackToLogsOnError on main: a failed container keeps its last log lines in its status';

const CLEANUP_FINDINGS = [
  { rule: 'hook-ttl', action: 'mutate', message: HOOK_TTL_MESSAGE },
  {
    rule: 'idempotent-cleanup',
    action: 'mutate',
    message:
      'container main: --ignore-not-found for kubectl delete configmap x (exec form): a retry after a partial run does not fail on what it already deleted',
  },
  {
    rule: 'idempotent-cleanup',
    action: 'mutate',
    message:
      'raised spec.backoffLimit from 1 to 3: a cleanup that fails once is retried before helm uninstall fails on it',
  },
  { rule: 'hook-deadline', action: 'warn', message: DEADLINE_MESSAGE },
  { rule: 'hook-label', action: 'mutate', message: HOOK_LABEL_MESSAGE },
  { rule: 'termination-message-policy', action: 'mutate', message: MESSAGE_POLICY_MESSAGE },
];

const CLEANUP_AUDIT_WARNINGS = [
  // Cut to 119 characters and an ellipsis; the audit log line has it whole.
  'hookguard audit would change [hook-ttl]: set spec.ttlSecondsAfterFinished to 86400: no delete policy removes this Job o…',
  // 127 characters before truncation: cut to 119 and an ellipsis.
  'hookguard audit would change [idempotent-cleanup]: container main: --ignore-not-found for kubectl delete configmap x (e…',
  'hookguard audit would change [idempotent-cleanup]: raised spec.backoffLimit from 1 to 3: a cleanup that fails once is r…',
  `hookguard audit note [hook-deadline]: ${DEADLINE_MESSAGE}`,
  `hookguard audit would change [hook-label]: ${HOOK_LABEL_MESSAGE}`,
  'hookguard audit would change [termination-message-policy]: set terminationMessagePolicy FallbackToLogsOnError on main: …',
];

/** A Helm install hook that opted out of min-runtime, as Argo CD applies Helm charts. */
const migrateJobSkippingMinRuntime = () =>
  hookJob({
    'helm.sh/hook': 'pre-install,pre-upgrade',
    'helm.sh/hook-delete-policy': 'before-hook-creation,hook-succeeded',
    'hookguard.io/skip': 'min-runtime',
  });

async function send(
  app: FastifyInstance,
  path: '/mutate' | '/validate',
  body: Json,
): Promise<{ status: number; review: AdmissionReviewResponse }> {
  const reply = await app.inject({ method: 'POST', url: path, payload: body });
  return { status: reply.statusCode, review: reply.json<AdmissionReviewResponse>() };
}

/** Sends the review and returns its response after checking the envelope every answer must have. */
async function respond(app: FastifyInstance, path: '/mutate' | '/validate', body: Json): Promise<AdmissionResponse> {
  const { status, review } = await send(app, path, body);
  expect(status).toBe(200);
  expect(review.apiVersion).toBe('admission.k8s.io/v1');
  expect(review.kind).toBe('AdmissionReview');
  return review.response;
}

afterEach(() => {
  vi.restoreAllMocks();
});

describe('POST /mutate', () => {
  it('patches a Helm cleanup hook Job with exactly the expected JSON Patch', async () => {
    const { app } = harness();
    const response = await respond(
      app,
      '/mutate',
      admissionReview({ uid: 'uid-cleanup-1', operation: 'CREATE', object: cleanupJob() }),
    );
    expect(Object.keys(response).sort()).toEqual(['allowed', 'patch', 'patchType', 'uid', 'warnings']);
    expect(response).toMatchObject({
      uid: 'uid-cleanup-1',
      allowed: true,
      patchType: 'JSONPatch',
      warnings: [DEADLINE_WARNING],
    });
    expect(decodePatch(response)).toEqual(CLEANUP_PATCH);
    // The patch applies cleanly to what was sent and yields exactly the object we expect stored.
    expect(applyPatch(cleanupJob(), decodePatch(response), true, false).newDocument).toEqual(cleanupJobPatched());
  });

  it('leaves the already-patched object alone (idempotent)', async () => {
    const { app } = harness();
    const response = await respond(
      app,
      '/mutate',
      admissionReview({ uid: 'uid-cleanup-2', operation: 'CREATE', object: cleanupJobPatched() }),
    );
    expect(response).toEqual({ uid: 'uid-cleanup-2', allowed: true, warnings: [DEADLINE_WARNING] });
  });

  it.each([
    [
      'a ConfigMap',
      { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'settings', namespace: 'apps' }, data: { a: 'b' } },
    ],
    [
      'a ConfigMap carrying a Helm hook annotation',
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'settings', namespace: 'apps', annotations: { 'helm.sh/hook': 'pre-install' } },
      },
    ],
    [
      'a plain Job',
      {
        apiVersion: 'batch/v1',
        kind: 'Job',
        metadata: { name: 'plain', namespace: 'apps' },
        spec: {
          backoffLimit: 0,
          template: {
            spec: {
              restartPolicy: 'Never',
              containers: [{ name: 'm', image: 'bitnami/kubectl', command: ['kubectl', 'delete', 'pod', 'x'] }],
            },
          },
        },
      },
    ],
  ])('allows %s without a patch or warnings', async (_name, object) => {
    const { app } = harness();
    const response = await respond(app, '/mutate', admissionReview({ uid: 'uid-plain', operation: 'CREATE', object }));
    expect(response).toEqual({ uid: 'uid-plain', allowed: true });
  });

  it.each([
    ['the global audit mode', { mode: 'audit' }, cleanupJob()],
    [
      'the per-object hookguard.io/mode: audit annotation in enforce mode',
      {},
      (() => {
        const job = cleanupJob();
        (job.metadata as { annotations: Record<string, string> }).annotations['hookguard.io/mode'] = 'audit';
        return job;
      })(),
    ],
  ])('in %s: allows unchanged and says what it would have done', async (_name, overrides, object) => {
    const { app, lines } = harness(overrides);
    const response = await respond(app, '/mutate', admissionReview({ uid: 'uid-audit', operation: 'CREATE', object }));
    expect(response).toEqual({ uid: 'uid-audit', allowed: true, warnings: CLEANUP_AUDIT_WARNINGS });
    for (const warning of response.warnings ?? []) {
      expect([...warning].length).toBeLessThanOrEqual(120);
      expect(warning.startsWith('hookguard audit')).toBe(true);
    }
    // The audit log keeps the patch that was not sent.
    expect(auditLines(lines)).toHaveLength(1);
    expect(auditLines(lines)[0]?.audit).toMatchObject({
      mode: 'audit',
      patch: CLEANUP_PATCH,
      patchApplied: false,
      reason: 'would mutate (audit)',
    });
  });

  it('shows every opt-out in the audit line, at an unknown Argo CD version where nothing denies it', async () => {
    // No argocd.version and no discovery: the version is unknown, so version-race judges nothing.
    const { app, lines } = harness();
    const optedOut = hookJob({
      'argocd.argoproj.io/hook': 'PreSync',
      'hookguard.io/skip': 'min-runtime, ttl-floor, no-such-rule',
      'hookguard.io/mode': 'audit',
    });
    const plain = hookJob({ 'argocd.argoproj.io/hook': 'PreSync' });
    for (const [uid, object] of [
      ['uid-opted-out', optedOut],
      ['uid-plain', plain],
    ] as const) {
      for (const path of ['/mutate', '/validate'] as const) {
        const response = await respond(
          app,
          path,
          admissionReview({ uid, operation: 'CREATE', object, username: ARGOCD_CONTROLLER }),
        );
        expect(response).toMatchObject({ uid, allowed: true });
      }
    }
    expect(auditLines(lines).map((line) => [line.audit?.uid, line.audit?.endpoint, line.audit?.optOuts])).toEqual([
      ['uid-opted-out', 'mutate', { skip: ['min-runtime', 'ttl-floor'], auditMode: true }],
      ['uid-opted-out', 'validate', { skip: ['min-runtime', 'ttl-floor'], auditMode: true }],
      ['uid-plain', 'mutate', undefined],
      ['uid-plain', 'validate', undefined],
    ]);
    expect(auditLines(lines)[0]?.audit).toMatchObject({ argocdVersion: null, mode: 'audit' });
  });

  it('patches a dryRun request exactly like a real one', async () => {
    const { app, lines } = harness();
    const response = await respond(
      app,
      '/mutate',
      admissionReview({ uid: 'uid-dry', operation: 'CREATE', object: cleanupJob(), dryRun: true }),
    );
    expect(response).toMatchObject({ uid: 'uid-dry', allowed: true, patchType: 'JSONPatch' });
    expect(decodePatch(response)).toEqual(CLEANUP_PATCH);
    expect(auditLines(lines)[0]?.audit).toMatchObject({ dryRun: true, patchApplied: true });
  });

  describe('UPDATE and DELETE', () => {
    /** Only a sync hook gets Argo CD's hook finalizer: the cleanup Job as a pre-upgrade hook. */
    function beingDeleted(job: Json): Json {
      const old = structuredClone(job);
      Object.assign(old.metadata as Json, {
        annotations: { 'helm.sh/hook': 'pre-upgrade' },
        deletionTimestamp: '2026-03-01T10:00:00Z',
        finalizers: ['foo', HOOK_FINALIZER],
      });
      return old;
    }

    function withNewImage(job: Json): Json {
      const changed = structuredClone(job) as { spec: { template: { spec: { containers: Json[] } } } };
      changed.spec.template.spec.containers[0]!.image = 'bitnami/kubectl:1.32';
      return changed;
    }

    const PATCH_COMMAND =
      `kubectl patch job cleanup -n apps --type json -p '[{"op":"test","path":"/metadata/finalizers/1","value":"${HOOK_FINALIZER}"},` +
      `{"op":"remove","path":"/metadata/finalizers/1"}]'`;

    it.each([
      ['applied by a user', 'kubernetes-admin', {}, ''],
      [
        'applied by Argo CD 2.14.3',
        ARGOCD_CONTROLLER,
        { 'argocd.version': '2.14.3' },
        ' (Argo CD 2.14.3, advisory argocd-hook-finalizer-partial)',
      ],
    ])(
      'denies a template change of a hook Job stuck on the hook finalizer, %s, with the exact fix',
      async (_name, username, overrides, argocd) => {
        const { app } = harness(overrides);
        const old = beingDeleted(cleanupJobPatched());
        const body = admissionReview({
          uid: 'uid-update',
          operation: 'UPDATE',
          object: withNewImage(old),
          oldObject: old,
          username,
        });
        const response = await respond(app, '/mutate', body);
        expect(response).toEqual({
          uid: 'uid-update',
          allowed: false,
          status: {
            code: 403,
            reason: 'Forbidden',
            message:
              'hookguard denied: Job apps/cleanup: spec.template is immutable and this update changes it, so the API server would reject it ("field is immutable"). ' +
              `The old Job is being deleted but still holds ${HOOK_FINALIZER}, which nothing will remove${argocd}. Fix: ${PATCH_COMMAND} and sync again.`,
          },
        });
      },
    );

    it.each(['/mutate', '/validate'] as const)(
      'never denies an UPDATE that only removes the hook finalizer (%s)',
      async (path) => {
        const { app } = harness({ 'argocd.version': '2.14.3' });
        const old = beingDeleted(cleanupJobPatched());
        const updated = structuredClone(old);
        (updated.metadata as Json).finalizers = ['foo'];
        const body = admissionReview({
          uid: 'uid-unfinalize',
          operation: 'UPDATE',
          object: updated,
          oldObject: old,
          username: ARGOCD_CONTROLLER,
        });
        expect(await respond(app, path, body)).toEqual({ uid: 'uid-unfinalize', allowed: true });
      },
    );

    it.each(['/mutate', '/validate'] as const)('allows a DELETE of a hook Job (%s)', async (path) => {
      const { app, lines } = harness();
      const body = admissionReview({ uid: 'uid-delete', operation: 'DELETE', object: null, oldObject: cleanupJob() });
      expect(await respond(app, path, body)).toEqual({ uid: 'uid-delete', allowed: true });
      expect(auditLines(lines)[0]?.audit).toMatchObject({
        operation: 'DELETE',
        kind: 'Job',
        namespace: 'apps',
        name: 'cleanup',
        reason: 'operation DELETE',
      });
    });
  });
});

describe('POST /validate', () => {
  const body = () =>
    admissionReview({
      uid: 'uid-race',
      operation: 'CREATE',
      object: migrateJobSkippingMinRuntime(),
      username: ARGOCD_CONTROLLER,
    });

  it('denies an Argo CD hook that opted out of the mitigation its known Argo CD version needs, naming the advisory', async () => {
    const { app } = harness({ 'argocd.version': '3.1.0' });
    const response = await respond(app, '/validate', body());
    expect(response).toEqual({
      uid: 'uid-race',
      allowed: false,
      status: {
        code: 403,
        reason: 'Forbidden',
        message:
          'hookguard denied: Job apps/migrate races with Argo CD 3.1.0 (argocd-fast-hook-finalizer-race: a hook Job that finishes before ' +
          'Argo CD observes it keeps the hook finalizer and the sync never ends): min-runtime opted out with hookguard.io/skip. Fix: remove min-runtime from hookguard.io/skip, or upgrade to Argo CD 3.4.0, which fixed the race.',
      },
    });
  });

  it('allows an unmutated hook sent straight to it on an affected version, with a warning and an audit line', async () => {
    const { app, lines } = harness({ 'argocd.version': '3.1.0' });
    const unmutated = hookJob({ 'argocd.argoproj.io/hook': 'PreSync' });
    const response = await respond(
      app,
      '/validate',
      admissionReview({ uid: 'uid-bypassed', operation: 'CREATE', object: unmutated, username: ARGOCD_CONTROLLER }),
    );
    expect(response).toEqual({
      uid: 'uid-bypassed',
      allowed: true,
      warnings: [
        'hookguard [version-race]: Job apps/migrate lacks min-runtime (was the mutating webhook bypassed?) and races with Argo C…',
      ],
    });
    const [audit] = auditLines(lines).map((line) => line.audit);
    expect(audit).toMatchObject({ uid: 'uid-bypassed', allowed: true, reason: 'mitigation missing, allowed' });
    // The brief line (log.auditDetail's default): the message is the warning's, cut.
    expect(audit?.findings).toEqual([
      {
        rule: 'version-race',
        action: 'warn',
        advisory: 'argocd-fast-hook-finalizer-race',
        missingMitigation: 'min-runtime',
      },
    ]);
  });

  it('never denies when the Argo CD version is unknown', async () => {
    const { app } = harness();
    expect(await respond(app, '/validate', body())).toEqual({ uid: 'uid-race', allowed: true });
  });

  it('does not deny a version the advisory does not affect', async () => {
    const { app } = harness({ 'argocd.version': '3.4.0' });
    expect(await respond(app, '/validate', body())).toEqual({ uid: 'uid-race', allowed: true });
  });
});

describe('bad input', () => {
  const valid = () => admissionReview({ uid: 'uid-bad', operation: 'CREATE', object: cleanupJob() });
  const withRequest = (change: (request: Json) => void) => {
    const review = valid();
    change(review.request as Json);
    return JSON.stringify(review);
  };

  it.each([
    [
      'a body that is not JSON',
      '{not json',
      // V8's own words, which differ between Node.js versions (22+ add the line and column).
      `the body is not valid JSON: ${jsonSyntaxMessage('{not json')}`,
    ],
    ['a JSON array', '[]', 'expected an AdmissionReview JSON object'],
    ['JSON null', 'null', 'expected an AdmissionReview JSON object'],
    [
      'apiVersion admission.k8s.io/v1beta1',
      JSON.stringify({ ...valid(), apiVersion: 'admission.k8s.io/v1beta1' }),
      'expected apiVersion admission.k8s.io/v1, got "admission.k8s.io/v1beta1"',
    ],
    [
      'kind AdmissionRequest',
      JSON.stringify({ ...valid(), kind: 'AdmissionRequest' }),
      'expected kind AdmissionReview, got "AdmissionRequest"',
    ],
    ['no kind', JSON.stringify({ ...valid(), kind: undefined }), 'expected kind AdmissionReview, got null'],
    [
      'no request',
      JSON.stringify({ apiVersion: 'admission.k8s.io/v1', kind: 'AdmissionReview' }),
      'AdmissionReview has no request object',
    ],
    [
      'a request that is a string',
      JSON.stringify({ ...valid(), request: 'x' }),
      'AdmissionReview has no request object',
    ],
    ['no uid', withRequest((request) => delete request.uid), 'AdmissionReview request.uid must be a non-empty string'],
    [
      'an empty uid',
      withRequest((request) => (request.uid = '')),
      'AdmissionReview request.uid must be a non-empty string',
    ],
    [
      'a numeric uid',
      withRequest((request) => (request.uid = 7)),
      'AdmissionReview request.uid must be a non-empty string',
    ],
    // Prototype poisoning is refused as Fastify refuses it, and said so rather than called invalid JSON.
    [
      'a __proto__ key',
      '{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","__proto__":{"x":1}}',
      'the body is refused: it holds a "__proto__" key or a "constructor" key with a "prototype" (Object contains forbidden prototype property); no Kubernetes object has one',
    ],
    ['an empty body', '', 'the body is empty; expected an AdmissionReview JSON object'],
  ])('answers 400 with the problem for %s', async (_name, payload, error) => {
    const { app, lines } = harness();
    for (const path of ['/mutate', '/validate']) {
      const reply = await app.inject({
        method: 'POST',
        url: path,
        headers: { 'content-type': 'application/json' },
        payload,
      });
      expect(reply.statusCode).toBe(400);
      expect(reply.json()).toEqual({ error });
    }
    // Nothing was decided, so nothing is audited.
    expect(auditLines(lines)).toEqual([]);
  });

  it('answers 400 to a text/plain body (Fastify reads it as a string, which is not an AdmissionReview object)', async () => {
    const { app } = harness();
    const reply = await app.inject({
      method: 'POST',
      url: '/mutate',
      headers: { 'content-type': 'text/plain' },
      payload: JSON.stringify(valid()),
    });
    expect(reply.statusCode).toBe(400);
    expect(reply.json()).toEqual({ error: 'expected an AdmissionReview JSON object' });
  });

  it('answers 415 to a media type it has no parser for', async () => {
    const { app } = harness();
    const reply = await app.inject({
      method: 'POST',
      url: '/mutate',
      headers: { 'content-type': 'application/yaml' },
      payload: 'a: b',
    });
    expect(reply.statusCode).toBe(415);
    expect(reply.json()).toEqual({ error: 'Unsupported Media Type' });
  });

  it.each([
    ['GET', '/nope'],
    ['GET', '/mutate'],
    ['POST', '/healthz'],
  ] as const)('answers 404 with the routes it serves to %s %s', async (method, url) => {
    const { app } = harness();
    const reply = await app.inject({ method, url });
    expect(reply.statusCode).toBe(404);
    expect(reply.json()).toEqual({
      error: `no route ${method} ${url}; hookguard serves POST /mutate, POST /validate, GET /healthz, GET /readyz, GET /metrics`,
    });
  });
});

describe('requests that arrive together (parsed and decided in one batch per turn)', () => {
  it('answers each with its own uid and decision, a bad body among them, and audits them in the order they came', async () => {
    const { app, lines } = harness();
    await app.ready();
    // What ran when: with the batch, every body of the turn is parsed before the first decision; without it, each
    // request's body and decision would follow each other.
    const steps: string[] = [];
    const parse = secureJson.parse.bind(secureJson);
    vi.spyOn(secureJson, 'parse').mockImplementation((...args: Parameters<typeof secureJson.parse>) => {
      steps.push('parse');
      return parse(...args);
    });
    const mutate = idempotentCleanup.mutate.bind(idempotentCleanup);
    vi.spyOn(idempotentCleanup, 'mutate').mockImplementation((...args: Parameters<typeof idempotentCleanup.mutate>) => {
      steps.push('decide');
      return mutate(...args);
    });
    const [cleanup, patchedAlready, broken, validated] = await Promise.all([
      app.inject({
        method: 'POST',
        url: '/mutate',
        payload: admissionReview({ uid: 'burst-1', operation: 'CREATE', object: cleanupJob() }),
      }),
      app.inject({
        method: 'POST',
        url: '/mutate',
        payload: admissionReview({ uid: 'burst-2', operation: 'CREATE', object: cleanupJobPatched() }),
      }),
      app.inject({ method: 'POST', url: '/mutate', headers: { 'content-type': 'application/json' }, payload: '{not' }),
      app.inject({
        method: 'POST',
        url: '/validate',
        payload: admissionReview({ uid: 'burst-3', operation: 'CREATE', object: cleanupJobPatched() }),
      }),
    ]);
    const first = cleanup.json<AdmissionReviewResponse>().response;
    expect(first.uid).toBe('burst-1');
    expect(decodePatch(first)).toEqual(CLEANUP_PATCH);
    expect(patchedAlready.json()).toEqual({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: { uid: 'burst-2', allowed: true, warnings: [DEADLINE_WARNING] },
    });
    expect(broken.statusCode).toBe(400);
    expect(broken.headers.connection).toBe('close');
    expect(broken.json()).toEqual({ error: `the body is not valid JSON: ${jsonSyntaxMessage('{not')}` });
    expect(validated.json<AdmissionReviewResponse>().response).toEqual({ uid: 'burst-3', allowed: true });
    expect(auditLines(lines).map((line) => [line.audit?.uid, line.audit?.endpoint])).toEqual([
      ['burst-1', 'mutate'],
      ['burst-2', 'mutate'],
      ['burst-3', 'validate'],
    ]);
    expect(steps).toEqual(['parse', 'parse', 'parse', 'parse', 'decide', 'decide']);
  });
});

describe('body limit (7 MiB)', () => {
  /** A hook Job review whose JSON is exactly `bytes` long, padded with one big annotation. */
  function reviewOfSize(bytes: number): string {
    const build = (padding: number) => {
      const job = cleanupJob();
      (job.metadata as { annotations: Record<string, string> }).annotations['example.com/blob'] = 'x'.repeat(padding);
      return JSON.stringify(admissionReview({ uid: 'uid-big', operation: 'CREATE', object: job }));
    };
    const text = build(bytes - build(0).length);
    expect(Buffer.byteLength(text)).toBe(bytes);
    return text;
  }

  it('accepts a body of exactly the limit and still patches it', async () => {
    const { app } = harness();
    const reply = await app.inject({
      method: 'POST',
      url: '/mutate',
      headers: { 'content-type': 'application/json' },
      payload: reviewOfSize(BODY_LIMIT),
    });
    expect(reply.statusCode).toBe(200);
    const { response } = reply.json<AdmissionReviewResponse>();
    expect(response.uid).toBe('uid-big');
    expect(decodePatch(response)).toEqual(CLEANUP_PATCH);
  });

  it('answers 413 naming the limit to a body one byte over it', async () => {
    const { app, lines } = harness();
    const reply = await app.inject({
      method: 'POST',
      url: '/mutate',
      headers: { 'content-type': 'application/json' },
      payload: reviewOfSize(BODY_LIMIT + 1),
    });
    expect(reply.statusCode).toBe(413);
    expect(reply.json()).toEqual({ error: 'request body is larger than the 7340032-byte limit' });
    expect(auditLines(lines)).toEqual([]);
  });
});

describe('a rule that throws', () => {
  it('never blocks: the request is allowed unchanged with one warning, and the failure is logged', async () => {
    vi.spyOn(idempotentCleanup, 'mutate').mockImplementation(() => {
      throw new Error('boom');
    });
    const { app, lines } = harness();
    const response = await respond(
      app,
      '/mutate',
      admissionReview({ uid: 'uid-throw', operation: 'CREATE', object: cleanupJob() }),
    );
    expect(response).toEqual({
      uid: 'uid-throw',
      allowed: true,
      warnings: ['hookguard internal error, request allowed unchanged: boom'],
    });
    expect(lines.filter((line) => line.level === 50)).toHaveLength(1);
    const [logged] = auditLines(lines);
    expect(auditLines(lines)).toHaveLength(1);
    expect(logged).toMatchObject({
      level: 50,
      msg: 'rule failed; request allowed unchanged',
      err: { type: 'Error', message: 'boom' },
      audit: {
        uid: 'uid-throw',
        allowed: true,
        reason: 'internal error, allowed unchanged',
        error: 'boom',
        patch: [],
        findings: [],
      },
    });
  });

  it.each([
    ['undefined', undefined, 'undefined'],
    ['null', null, 'null'],
    ['a string', 'plain string', 'plain string'],
  ])('never blocks when a rule throws %s', async (_name, thrown, said) => {
    vi.spyOn(idempotentCleanup, 'mutate').mockImplementation(() => {
      // eslint-disable-next-line @typescript-eslint/only-throw-error -- rules may throw anything; the server must cope
      throw thrown;
    });
    const { app, lines } = harness();
    const response = await respond(
      app,
      '/mutate',
      admissionReview({ uid: 'uid-odd-throw', operation: 'CREATE', object: cleanupJob() }),
    );
    expect(response).toEqual({
      uid: 'uid-odd-throw',
      allowed: true,
      warnings: [`hookguard internal error, request allowed unchanged: ${said}`],
    });
    expect(auditLines(lines)).toEqual([
      expect.objectContaining({
        level: 50,
        audit: expect.objectContaining({ reason: 'internal error, allowed unchanged', error: said }),
      }),
    ]);
  });

  it('leaves a script nested too deeply to analyse as written, and still fixes the rest (deeply nested $( in sh -c)', async () => {
    const job = cleanupJob() as { spec: { template: { spec: { containers: Json[] } } } };
    job.spec.template.spec.containers[0]!.command = ['sh', '-c', `kubectl delete cm x; echo ${'$('.repeat(200_000)}`];
    const { app, lines } = harness();
    const response = await respond(
      app,
      '/mutate',
      admissionReview({ uid: 'uid-deep', operation: 'CREATE', object: job }),
    );
    expect(response.uid).toBe('uid-deep');
    expect(response.allowed).toBe(true);
    expect(response.warnings).toEqual([DEADLINE_WARNING]);
    expect(decodePatch(response)).toEqual([
      { op: 'add', path: '/spec/template/spec/containers/0/terminationMessagePolicy', value: 'FallbackToLogsOnError' },
      { op: 'replace', path: '/spec/backoffLimit', value: 3 },
      { op: 'add', path: '/spec/ttlSecondsAfterFinished', value: 86400 },
      { op: 'add', path: '/metadata/labels', value: { 'hookguard.io/hook': 'admitted' } },
    ]);
    expect(lines.filter((line) => line.level === 50)).toHaveLength(0);
  });
});

describe('audit log', () => {
  /** The audit lines of cleanupJob() sent to /mutate by alice, parsed and as written. */
  async function cleanupJobAudited(overrides: Record<string, unknown> = {}) {
    const { app, lines, written } = harness(overrides);
    await respond(
      app,
      '/mutate',
      admissionReview({ uid: 'uid-audit-line', operation: 'CREATE', object: cleanupJob(), username: 'alice' }),
    );
    return { audits: auditLines(lines), written };
  }

  /** What a line says of cleanupJob() at either detail, but for its findings. */
  const CLEANUP_AUDIT = {
    uid: 'uid-audit-line',
    endpoint: 'mutate',
    operation: 'CREATE',
    kind: 'Job',
    namespace: 'apps',
    name: 'cleanup',
    user: 'alice',
    dryRun: false,
    mode: 'enforce',
    argocdVersion: null,
    // The ops were sent: the answer carries them, and each mutate finding says what it changed.
    patch: [],
    patchApplied: true,
    allowed: true,
    reason: 'mutated',
    durationMs: expect.any(Number),
  };

  it('writes exactly one brief line per decision by default: what was asked, the outcome, and each finding as its rule and action', async () => {
    const { audits, written } = await cleanupJobAudited();
    expect(audits).toHaveLength(1);
    const [line] = audits;
    expect(line).toMatchObject({ level: 30, msg: 'admission decision' });
    expect(line?.audit).toEqual({
      ...CLEANUP_AUDIT,
      findings: CLEANUP_FINDINGS.map(({ rule, action }) => ({ rule, action })),
    });
    // The audit record's text, exactly as written after pino's time and bindings.
    const [text] = written.filter((entry) => entry.includes('"audit"'));
    expect(
      text?.replace(/,"time":\d+,"pid":\d+,"hostname":"[^"]*"/, '').replace(/"durationMs":[\d.e-]+/, '"durationMs":0'),
    ).toBe(
      '{"level":30,"audit":{"uid":"uid-audit-line","endpoint":"mutate","operation":"CREATE","kind":"Job","namespace":"apps",' +
        '"name":"cleanup","user":"alice","dryRun":false,"mode":"enforce","argocdVersion":null,"patch":[],"patchApplied":true,' +
        '"allowed":true,"reason":"mutated","findings":[{"rule":"hook-ttl","action":"mutate"},' +
        '{"rule":"idempotent-cleanup","action":"mutate"},{"rule":"idempotent-cleanup","action":"mutate"},' +
        '{"rule":"hook-deadline","action":"warn"},{"rule":"hook-label","action":"mutate"},' +
        '{"rule":"termination-message-policy","action":"mutate"}],"durationMs":0},"msg":"admission decision"}',
    );
  });

  it("writes the findings' messages, the rules that ran and the hook with log.auditDetail: full", async () => {
    const { audits } = await cleanupJobAudited({ 'log.auditDetail': 'full' });
    expect(audits).toHaveLength(1);
    const [line] = audits;
    expect(line).toMatchObject({ level: 30, msg: 'admission decision' });
    expect(line?.audit).toEqual({
      ...CLEANUP_AUDIT,
      hook: { system: 'helm', phases: ['post-delete'], appliedByArgo: false },
      rules: [
        'hook-ttl',
        'idempotent-cleanup',
        'ttl-floor',
        'hook-deadline',
        'mesh-sidecar',
        'hook-sync-options',
        'suspended-hook',
        'hook-managed-by',
        'hook-label',
        'termination-message-policy',
      ],
      findings: CLEANUP_FINDINGS,
    });
    expect(line?.audit?.durationMs).toBeGreaterThanOrEqual(0);
  });

  it('writes a finding with characters beyond ASCII as \\u escapes that read back as the same message', async () => {
    const { app, lines, written } = harness({ 'log.auditDetail': 'full' });
    const selector = `app.kubernetes.io/instance=${'x'.repeat(120)}`;
    const job = cleanupJob();
    (job.spec as { template: { spec: { containers: Json[] } } }).template.spec.containers = [
      { name: 'main', image: 'bitnami/kubectl:1.31', command: ['kubectl', 'delete', 'configmap', '-l', selector] },
    ];
    await respond(app, '/mutate', admissionReview({ uid: 'uid-long', operation: 'CREATE', object: job }));
    const findings = auditLines(lines)[0]?.audit?.findings as { rule: string; message: string }[];
    expect(findings.filter((finding) => finding.message.startsWith('container main'))).toEqual([
      {
        rule: 'idempotent-cleanup',
        action: 'mutate',
        message: `container main: --ignore-not-found for kubectl delete configmap -l ${selector.slice(0, 39)}… (exec form): a retry after a partial run does not fail on what it already deleted`,
      },
    ]);
    const [line] = written.filter((text) => text.includes('"audit"'));
    expect(line).toContain(`${selector.slice(0, 39)}\\u2026 (exec form)`);
    expect(line).not.toMatch(/[\u0080-\uffff]/);
  });

  it('audits a denial with its message and a pass-through with its reason, one line each', async () => {
    const { app, lines } = harness({ 'argocd.version': '3.1.0' });
    await respond(
      app,
      '/validate',
      admissionReview({
        uid: 'uid-a',
        operation: 'CREATE',
        object: migrateJobSkippingMinRuntime(),
        username: ARGOCD_CONTROLLER,
      }),
    );
    await respond(
      app,
      '/mutate',
      admissionReview({
        uid: 'uid-b',
        operation: 'CREATE',
        object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'apps' } },
      }),
    );
    const audits = auditLines(lines).map((line) => line.audit);
    expect(audits).toHaveLength(2);
    expect(audits[0]).toMatchObject({
      uid: 'uid-a',
      endpoint: 'validate',
      user: ARGOCD_CONTROLLER,
      argocdVersion: '3.1.0',
      findings: [{ rule: 'version-race', action: 'deny', advisory: 'argocd-fast-hook-finalizer-race' }],
      allowed: false,
      reason: 'denied',
      denial: expect.stringContaining('argocd-fast-hook-finalizer-race'),
    });
    expect(audits[1]).toMatchObject({
      uid: 'uid-b',
      kind: 'ConfigMap',
      name: 'c',
      allowed: true,
      reason: 'not a hook object',
      findings: [],
      patch: [],
    });
  });
});

describe('health endpoints', () => {
  it('answers /healthz and /readyz with 200 once ready', async () => {
    const { app } = harness();
    await app.ready();
    const health = await app.inject({ method: 'GET', url: '/healthz' });
    expect([health.statusCode, health.json()]).toEqual([200, { status: 'ok' }]);
    const ready = await app.inject({ method: 'GET', url: '/readyz' });
    expect([ready.statusCode, ready.json()]).toEqual([200, { status: 'ready' }]);
  });

  it('takes no more injected requests once closing started (Fastify refuses them, so /readyz 503 cannot be observed here)', async () => {
    const { app } = harness();
    await app.ready();
    const closing = app.close();
    await new Promise((resolve) => setImmediate(resolve));
    await expect(app.inject({ method: 'GET', url: '/readyz' })).rejects.toMatchObject({
      code: 'FST_ERR_REOPENED_CLOSE_SERVER',
    });
    await closing;
  });
});
