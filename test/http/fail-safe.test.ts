// Fail-safety for the whole answer (issue 37 item 5): whatever throws around the decision, the request gets an
// AdmissionReview with its uid, as docs/server.md "When hookguard fails" says, never a 500.
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { auditRecord } from '../../src/http/audit.js';
import { buildApp } from '../../src/http/app.js';
import { Metrics } from '../../src/http/metrics.js';
import { fromDecision, type AdmissionReviewResponse } from '../../src/http/responses.js';
import { idempotentCleanup } from '../../src/rules/idempotent-cleanup.js';
import { hookJob } from '../support/objects.js';
import { admissionReview, decodePatch } from '../support/reviews.js';

vi.mock('../../src/http/audit.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../src/http/audit.js')>();
  return { ...original, auditRecord: vi.fn(original.auditRecord) };
});
vi.mock('../../src/http/responses.js', async (importOriginal) => {
  const original = await importOriginal<typeof import('../../src/http/responses.js')>();
  return { ...original, fromDecision: vi.fn(original.fromDecision) };
});

type LogLine = Record<string, unknown> & { level: number; msg: string };

function harness() {
  const lines: LogLine[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString('utf8').split('\n')) if (line !== '') lines.push(JSON.parse(line) as LogLine);
      callback();
    },
  });
  const metrics = new Metrics();
  const logger = pino({ level: 'info' }, sink);
  const app = buildApp(loadConfig({ overrides: {} }), { logger, metrics });
  return { app, lines, metrics, logger };
}

// A Helm hook whose kubectl delete gets --ignore-not-found: a decision with a patch.
const cleanupHook = () =>
  hookJob(
    { 'helm.sh/hook': 'pre-delete' },
    {
      template: {
        spec: {
          restartPolicy: 'Never',
          containers: [{ name: 'main', image: 'bitnami/kubectl', command: ['sh', '-c', 'kubectl delete cm x'] }],
        },
      },
    },
  );

async function send(app: ReturnType<typeof harness>['app'], uid: string) {
  const reply = await app.inject({
    method: 'POST',
    url: '/mutate',
    payload: admissionReview({ uid, operation: 'CREATE', object: cleanupHook() }),
  });
  return { status: reply.statusCode, review: reply.json<AdmissionReviewResponse>() };
}

async function errorsCounted(metrics: Metrics): Promise<string[]> {
  const { text } = await metrics.exposition();
  return text.split('\n').filter((line) => line.startsWith('hookguard_errors_total{') && !line.endsWith(' 0'));
}

const ALLOWED_UNCHANGED = 'hookguard internal error, request allowed unchanged: ';

afterEach(() => {
  vi.mocked(auditRecord).mockReset();
  vi.mocked(fromDecision).mockReset();
  vi.restoreAllMocks();
});

describe('a failure around the decision is answered with the uid, never a 500', () => {
  it('answers as decided when the audit line throws: the patch is sent, the failure logged and counted', async () => {
    const { app, lines, metrics } = harness();
    const control = await send(app, 'uid-control');
    expect(control.status).toBe(200);
    const expectedPatch = decodePatch(control.review.response);
    expect(expectedPatch.length).toBeGreaterThan(0);

    vi.mocked(auditRecord).mockImplementation(() => {
      throw new Error('audit line broken');
    });
    const { status, review } = await send(app, 'uid-audit');
    expect(status).toBe(200);
    expect(review.response.uid).toBe('uid-audit');
    expect(review.response.allowed).toBe(true);
    expect(decodePatch(review.response)).toEqual(expectedPatch);
    expect(lines.filter((line) => line.level === 50).map((line) => [line.msg, line.uid])).toEqual([
      ['recording the decision failed; answered as decided', 'uid-audit'],
    ]);
    expect(await errorsCounted(metrics)).toEqual(['hookguard_errors_total{source="answer"} 1']);
  });

  it('answers as decided when a metric throws', async () => {
    const { app, metrics } = harness();
    vi.spyOn(metrics, 'request').mockImplementation(() => {
      throw new Error('metrics broken');
    });
    const { status, review } = await send(app, 'uid-metrics');
    expect(status).toBe(200);
    expect(review.response.uid).toBe('uid-metrics');
    expect(review.response.patchType).toBe('JSONPatch');
  });

  it('allows unchanged with a warning when the answer cannot be built', async () => {
    const { app, lines, metrics } = harness();
    vi.mocked(fromDecision).mockImplementation(() => {
      throw new RangeError('response builder broken');
    });
    const { status, review } = await send(app, 'uid-builder');
    expect(status).toBe(200);
    expect(review).toEqual({
      apiVersion: 'admission.k8s.io/v1',
      kind: 'AdmissionReview',
      response: { uid: 'uid-builder', allowed: true, warnings: [`${ALLOWED_UNCHANGED}response builder broken`] },
    });
    expect(lines.filter((line) => line.level === 50).map((line) => [line.msg, line.uid])).toEqual([
      ['answer failed; request allowed unchanged', 'uid-builder'],
    ]);
    const { text } = await metrics.exposition();
    expect(text).toContain('hookguard_admission_requests_total{endpoint="mutate",decision="errored"} 1');
    expect(await errorsCounted(metrics)).toEqual(['hookguard_errors_total{source="answer"} 1']);
  });

  it('allows unchanged when a rule throws and its audit line throws too', async () => {
    const { app } = harness();
    vi.spyOn(idempotentCleanup, 'mutate').mockImplementation(() => {
      throw new Error('rule broken');
    });
    vi.mocked(auditRecord).mockImplementation(() => {
      throw new Error('audit line broken');
    });
    const { status, review } = await send(app, 'uid-rule-and-audit');
    expect(status).toBe(200);
    expect(review.response).toEqual({
      uid: 'uid-rule-and-audit',
      allowed: true,
      warnings: [`${ALLOWED_UNCHANGED}audit line broken`],
    });
  });

  it('still answers when what was thrown cannot be shown and the logger and metrics throw too', async () => {
    const { app, logger, metrics } = harness();
    vi.mocked(fromDecision).mockImplementation(() => {
      throw Object.create(null);
    });
    vi.spyOn(logger, 'error').mockImplementation(() => {
      throw new Error('logger broken');
    });
    vi.spyOn(metrics, 'error').mockImplementation(() => {
      throw new Error('metrics broken');
    });
    const { status, review } = await send(app, 'uid-unshowable');
    expect(status).toBe(200);
    expect(review.response).toEqual({
      uid: 'uid-unshowable',
      allowed: true,
      warnings: [`${ALLOWED_UNCHANGED}a value that cannot be shown`],
    });
    // The server goes on answering.
    vi.mocked(fromDecision).mockRestore();
    expect((await send(app, 'uid-after')).review.response.uid).toBe('uid-after');
  });
});
