import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { buildApp } from '../../src/http/app.js';
import type { ArgoInstance, ArgoInstances } from '../../src/core/argocd-instances.js';
import { knownArgoCdInstances, Metrics } from '../../src/http/metrics.js';
import { idempotentCleanup } from '../../src/rules/idempotent-cleanup.js';
import { generateDevCertificate } from '../../src/tls/certificates.js';
import { ARGOCD_CONTROLLER, hookJob } from '../support/objects.js';
import { admissionReview } from '../support/reviews.js';

afterEach(() => {
  vi.restoreAllMocks();
});

function app(metrics = new Metrics()): FastifyInstance {
  return buildApp(loadConfig({ overrides: { 'argocd.version': '3.1.0' } }), {
    logger: pino({ level: 'silent' }),
    metrics,
  });
}

async function post(target: FastifyInstance, url: '/mutate' | '/validate', payload: string): Promise<number> {
  const reply = await target.inject({ method: 'POST', url, payload, headers: { 'content-type': 'application/json' } });
  return reply.statusCode;
}

const review = (uid: string, object: Record<string, unknown>, username?: string) =>
  JSON.stringify(admissionReview({ uid, operation: 'CREATE', object, ...(username ? { username } : {}) }));

/** A Helm cleanup hook: delete policy added, --ignore-not-found added, backoffLimit raised. */
const cleanupJob = () =>
  hookJob(
    { 'helm.sh/hook': 'post-delete' },
    {
      backoffLimit: 1,
      template: {
        spec: {
          restartPolicy: 'Never',
          containers: [{ name: 'main', image: 'bitnami/kubectl:1.31', command: ['kubectl', 'delete', 'cm', 'x'] }],
        },
      },
    },
  );
const configMap = { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'plain', namespace: 'apps' }, data: {} };
/** An Argo CD hook that opted out of min-runtime on an affected version: denied at /validate. */
const racingJob = () =>
  hookJob({
    'argocd.argoproj.io/hook': 'PreSync',
    'argocd.argoproj.io/hook-delete-policy': 'HookSucceeded',
    'hookguard.io/skip': 'min-runtime',
  });

async function scrape(target: FastifyInstance, prefix: string): Promise<string[]> {
  const reply = await target.inject({ method: 'GET', url: '/metrics' });
  expect(reply.statusCode).toBe(200);
  expect(reply.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
  return reply.body.split('\n').filter((line) => line.startsWith(prefix));
}

describe('GET /metrics', () => {
  it('counts requests by endpoint and decision, rule actions by rule and action, and errors, exactly', async () => {
    const target = app();
    expect(await post(target, '/mutate', review('patched', cleanupJob()))).toBe(200);
    expect(await post(target, '/mutate', review('plain', configMap))).toBe(200);
    expect(await post(target, '/validate', review('denied', racingJob(), ARGOCD_CONTROLLER))).toBe(200);
    expect(await post(target, '/mutate', '{not json')).toBe(400);
    expect(await post(target, '/validate', '[]')).toBe(400);
    vi.spyOn(idempotentCleanup, 'mutate').mockImplementation(() => {
      throw new Error('boom');
    });
    expect(await post(target, '/mutate', review('errored', cleanupJob()))).toBe(200);

    expect(await scrape(target, 'hookguard_admission_requests_total')).toEqual([
      'hookguard_admission_requests_total{endpoint="mutate",decision="allowed"} 1',
      'hookguard_admission_requests_total{endpoint="mutate",decision="patched"} 1',
      'hookguard_admission_requests_total{endpoint="mutate",decision="denied"} 0',
      'hookguard_admission_requests_total{endpoint="mutate",decision="errored"} 1',
      'hookguard_admission_requests_total{endpoint="mutate",decision="bad_request"} 1',
      'hookguard_admission_requests_total{endpoint="validate",decision="allowed"} 0',
      'hookguard_admission_requests_total{endpoint="validate",decision="patched"} 0',
      'hookguard_admission_requests_total{endpoint="validate",decision="denied"} 1',
      'hookguard_admission_requests_total{endpoint="validate",decision="errored"} 0',
      'hookguard_admission_requests_total{endpoint="validate",decision="bad_request"} 1',
    ]);
    expect(await scrape(target, 'hookguard_rule_actions_total')).toEqual([
      'hookguard_rule_actions_total{rule="hook-ttl",action="mutate"} 1',
      'hookguard_rule_actions_total{rule="idempotent-cleanup",action="mutate"} 2',
      // The missing deadline, named (hook-deadline sets none by default).
      'hookguard_rule_actions_total{rule="hook-deadline",action="warn"} 1',
      'hookguard_rule_actions_total{rule="hook-label",action="mutate"} 1',
      'hookguard_rule_actions_total{rule="termination-message-policy",action="mutate"} 1',
      'hookguard_rule_actions_total{rule="version-race",action="deny"} 1',
    ]);
    expect(await scrape(target, 'hookguard_errors_total')).toEqual([
      'hookguard_errors_total{source="rule"} 1',
      'hookguard_errors_total{source="answer"} 0',
      'hookguard_errors_total{source="http"} 0',
      'hookguard_errors_total{source="tls_reload"} 0',
    ]);
    // The unparsable body never reached the handler, so it has no latency; the other five do.
    expect(await scrape(target, 'hookguard_admission_duration_seconds_count')).toEqual([
      'hookguard_admission_duration_seconds_count{endpoint="mutate"} 3',
      'hookguard_admission_duration_seconds_count{endpoint="validate"} 2',
    ]);
    const buckets = await scrape(target, 'hookguard_admission_duration_seconds_bucket{le="+Inf",endpoint="mutate"}');
    expect(buckets).toEqual(['hookguard_admission_duration_seconds_bucket{le="+Inf",endpoint="mutate"} 3']);
  });

  it('counts hooks allowed without a mitigation hookguard failed to add, by mitigation and advisory', async () => {
    const target = app();
    const line = 'hookguard_mitigation_missing_total{rule="min-runtime",advisory="argocd-fast-hook-finalizer-race"}';
    expect(await scrape(target, 'hookguard_mitigation_missing_total')).toEqual([]);
    // An Argo CD hook that never went through /mutate: no guard, no opt-out.
    const unmutated = hookJob({ 'argocd.argoproj.io/hook': 'PreSync' });
    expect(await post(target, '/validate', review('bypassed-1', unmutated, ARGOCD_CONTROLLER))).toBe(200);
    expect(await post(target, '/validate', review('bypassed-2', unmutated, ARGOCD_CONTROLLER))).toBe(200);
    // An opt-out is denied, not counted as missing.
    expect(await post(target, '/validate', review('opted-out', racingJob(), ARGOCD_CONTROLLER))).toBe(200);
    expect(await scrape(target, 'hookguard_mitigation_missing_total')).toEqual([`${line} 2`]);
    expect(await scrape(target, 'hookguard_admission_requests_total{endpoint="validate"')).toEqual([
      'hookguard_admission_requests_total{endpoint="validate",decision="allowed"} 2',
      'hookguard_admission_requests_total{endpoint="validate",decision="patched"} 0',
      'hookguard_admission_requests_total{endpoint="validate",decision="denied"} 1',
      'hookguard_admission_requests_total{endpoint="validate",decision="errored"} 0',
      'hookguard_admission_requests_total{endpoint="validate",decision="bad_request"} 0',
    ]);
  });

  it('counts every opt-out by endpoint, kind and rule, whatever the Argo CD version', async () => {
    for (const version of [undefined, '2.13.3', '3.1.0']) {
      const metrics = new Metrics();
      const target = buildApp(loadConfig({ overrides: version ? { 'argocd.version': version } : {} }), {
        logger: pino({ level: 'silent' }),
        metrics,
      });
      expect(await scrape(target, 'hookguard_opt_outs_total')).toEqual([]);
      const audited = hookJob({ 'helm.sh/hook': 'pre-upgrade', 'hookguard.io/mode': 'audit' });
      expect(await post(target, '/mutate', review('skip', racingJob(), ARGOCD_CONTROLLER))).toBe(200);
      expect(await post(target, '/validate', review('skip', racingJob(), ARGOCD_CONTROLLER))).toBe(200);
      expect(await post(target, '/mutate', review('audit', audited))).toBe(200);
      expect(await post(target, '/mutate', review('plain', cleanupJob()))).toBe(200);
      expect(await scrape(target, 'hookguard_opt_outs_total')).toEqual([
        'hookguard_opt_outs_total{endpoint="mutate",kind="skip",rule="min-runtime"} 1',
        'hookguard_opt_outs_total{endpoint="mutate",kind="audit_mode",rule=""} 1',
        'hookguard_opt_outs_total{endpoint="validate",kind="skip",rule="min-runtime"} 1',
      ]);
    }
  });

  it('reports the totals so far at every scrape, and later requests add to them', async () => {
    const target = app();
    const patchedLine = 'hookguard_admission_requests_total{endpoint="mutate",decision="patched"}';
    const ruleLine = 'hookguard_rule_actions_total{rule="hook-ttl",action="mutate"}';
    await post(target, '/mutate', review('first', cleanupJob()));
    for (let scrapes = 0; scrapes < 2; scrapes++) {
      expect(await scrape(target, patchedLine)).toEqual([`${patchedLine} 1`]);
      expect(await scrape(target, ruleLine)).toEqual([`${ruleLine} 1`]);
    }
    await post(target, '/mutate', review('second', cleanupJob()));
    expect(await scrape(target, patchedLine)).toEqual([`${patchedLine} 2`]);
    expect(await scrape(target, ruleLine)).toEqual([`${ruleLine} 2`]);
  });

  it('counts an oversized body as a bad request of its endpoint', async () => {
    const target = app();
    expect(await post(target, '/validate', `{"pad":"${'x'.repeat(7 * 1024 * 1024)}"}`)).toBe(413);
    expect(
      await scrape(target, 'hookguard_admission_requests_total{endpoint="validate",decision="bad_request"}'),
    ).toEqual(['hookguard_admission_requests_total{endpoint="validate",decision="bad_request"} 1']);
  });

  it('keeps the counters of two apps apart (a registry each, not the global one)', async () => {
    const first = app();
    const second = app();
    await post(first, '/mutate', review('one', configMap));
    expect(await scrape(second, 'hookguard_admission_requests_total{endpoint="mutate",decision="allowed"}')).toEqual([
      'hookguard_admission_requests_total{endpoint="mutate",decision="allowed"} 0',
    ]);
  });

  it('shows the Argo CD versions known at scrape time, and the serving certificate expiry', async () => {
    let instances = [{ namespace: 'argocd', version: '2.14.8' }];
    const metrics = new Metrics({ argocdInstances: () => instances });
    const certificate = await generateDevCertificate();
    metrics.certificate(certificate.cert, false);
    const target = app(metrics);
    expect(await scrape(target, 'hookguard_argocd_instance_info')).toEqual([
      'hookguard_argocd_instance_info{namespace="argocd",version="2.14.8"} 1',
    ]);
    instances = [
      { namespace: 'argocd', version: '3.4.1' },
      { namespace: 'team-a', version: '2.13.0' },
    ];
    expect(await scrape(target, 'hookguard_argocd_instance_info')).toEqual([
      'hookguard_argocd_instance_info{namespace="argocd",version="3.4.1"} 1',
      'hookguard_argocd_instance_info{namespace="team-a",version="2.13.0"} 1',
    ]);
    const expiry = Math.floor(
      Date.parse(new (await import('node:crypto')).X509Certificate(certificate.cert).validTo) / 1000,
    );
    expect(await scrape(target, 'hookguard_tls_certificate_not_after_timestamp_seconds ')).toEqual([
      `hookguard_tls_certificate_not_after_timestamp_seconds ${expiry}`,
    ]);
    expect(await scrape(target, 'hookguard_tls_reloads_total ')).toEqual(['hookguard_tls_reloads_total 0']);
  });

  it('has no process metrics unless asked (apps built in tests), and has them when asked (serve)', async () => {
    expect(await scrape(app(), 'process_cpu_user_seconds_total')).toEqual([]);
    expect(await scrape(app(new Metrics({ processMetrics: true })), 'process_cpu_user_seconds_total')).toHaveLength(1);
  });
});

describe('the Argo CD versions the gauge shows', () => {
  const discovered = (): ArgoInstances =>
    new Map<string, ArgoInstance>([
      [
        'argocd',
        {
          namespace: 'argocd',
          version: '2.14.3',
          source: 'Deployment argocd-application-controller: image tag',
          controllerUsernames: [],
        },
      ],
      ['team-a', { namespace: 'team-a', version: undefined, source: 'image tag latest', controllerUsernames: [] }],
    ]);

  it('are what discovery knows, an unknown version said as "unknown"', () => {
    expect(knownArgoCdInstances(null, discovered)).toEqual([
      { namespace: 'argocd', version: '2.14.3' },
      { namespace: 'team-a', version: 'unknown' },
    ]);
  });

  it('are the pinned version alone when argocd.version is set (it overrides discovery)', () => {
    expect(knownArgoCdInstances('3.4.1', discovered)).toEqual([{ namespace: '', version: '3.4.1' }]);
  });
});
