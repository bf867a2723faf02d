// The audit log cannot take the server down: the built server in a child process whose stdout is a pipe nobody
// reads (issue 22: pino's own destination queued without bound, the heap went from 40 to 341 MiB and SIGTERM took
// 112 s). Under load every request is answered, the live heap stays within the log's queue bound, each line is
// either written or counted as dropped (hookguard_log_lines_dropped_total{line="audit"}, and linesDroppedBefore in the next line
// written), and SIGTERM with a full queue exits at once after log.flushTimeoutMs. Counts are asserted, not times.
import { writeFileSync } from 'node:fs';
import https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import autocannon from 'autocannon';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { autocannonRequests, buildWorkload } from '../../bench/workload.js';
import { decisionContext } from '../../src/config/decision-context.js';
import { loadConfig } from '../../src/config/load.js';
import { decide } from '../../src/core/decide.js';
import { generateDevCertificate } from '../../src/tls/certificates.js';
import { ARGOCD_CONTROLLER } from '../support/objects.js';
import {
  gcProbeOptions,
  startHookguard,
  writeCertificate,
  type CertificateFiles,
  type ServerProcess,
} from '../support/server-process.js';

const MiB = 1024 * 1024;
const ARGOCD_VERSION = '2.14.3';
const REQUESTS = 20_000;
const MAX_QUEUE_BYTES = 4 * MiB;
const FLUSH_TIMEOUT_MS = 2_000;
// The queue (4 MiB of one-byte strings), a pipe's 64 KiB and what a loaded server holds besides; issue 22 measured
// +300 MiB without the bound.
const HEAP_GROWTH_LIMIT_BYTES = 16 * MiB;

const configFile = join(tmpdir(), `hookguard-audit-log-${process.pid}.yaml`);
writeFileSync(
  configFile,
  stringify({
    server: { shutdownDelayMs: 0 },
    log: { maxQueueBytes: MAX_QUEUE_BYTES, flushTimeoutMs: FLUSH_TIMEOUT_MS },
  }),
);

let certificate: CertificateFiles | undefined;
const servers: ServerProcess[] = [];
afterAll(async () => {
  for (const server of servers) await server.stop('SIGKILL');
  certificate?.remove();
});

async function serverWithUnreadStdout(): Promise<ServerProcess> {
  certificate ??= writeCertificate(await generateDevCertificate());
  const server = await startHookguard(certificate, {
    extraArgs: ['--argocd-version', ARGOCD_VERSION, '--config', configFile],
    nodeOptions: gcProbeOptions,
    // A pipe this process never reads from (until the test says so): the child's writes find it full.
    stdout: 'pipe',
  });
  servers.push(server);
  return server;
}

function requestMix() {
  const context = decisionContext(loadConfig(), ARGOCD_VERSION);
  const { requests } = buildWorkload(ARGOCD_CONTROLLER, (request) => decide(request, 'mutate', context).patch);
  return autocannonRequests(requests, { freshUids: true });
}

const load = (server: ServerProcess, amount: number, connections = 64) =>
  autocannon({ url: server.url, connections, pipelining: 1, amount, requests: requestMix(), idReplacement: true });

function metric(server: ServerProcess, name: string): Promise<number> {
  return new Promise((resolve, reject) => {
    https
      .get(
        {
          host: '127.0.0.1',
          port: server.port,
          path: '/metrics',
          ca: certificate!.cert,
          servername: 'localhost',
          agent: false,
        },
        (response) => {
          let text = '';
          response.on('data', (chunk: Buffer) => (text += chunk.toString('utf8')));
          response.on('end', () => {
            const found = new RegExp(`^${name.replace(/[{}]/g, '\\$&')} (\\d+)$`, 'm').exec(text);
            if (found) resolve(Number(found[1]));
            else reject(new Error(`no ${name} in /metrics`));
          });
        },
      )
      .on('error', reject);
  });
}

describe('the audit log with a stdout nobody reads (built server, child process, real TLS)', () => {
  it(`answers every one of ${REQUESTS} requests with a bounded heap, and accounts for every audit line`, async () => {
    const server = await serverWithUnreadStdout();
    const warmup = await load(server, 2_000);
    expect([warmup.errors, warmup.timeouts, warmup.non2xx]).toEqual([0, 0, 0]);
    const heapBefore = await server.heapAfterGc();
    const rssBefore = server.memory().rssBytes;

    const run = await load(server, REQUESTS);
    const heapAfter = await server.heapAfterGc();
    const rssAfter = server.memory().rssBytes;
    const dropped = await metric(server, 'hookguard_log_lines_dropped_total{line="audit"}');
    const figures = {
      requests: run.requests.total,
      rps: Math.round(run.requests.total / run.duration),
      p99Ms: run.latency.p99,
      dropped,
      heapBeforeMiB: +(heapBefore / MiB).toFixed(2),
      heapAfterMiB: +(heapAfter / MiB).toFixed(2),
      rssBeforeMiB: +(rssBefore / MiB).toFixed(1),
      rssAfterMiB: +(rssAfter / MiB).toFixed(1),
      peakRssMiB: +(server.memory().peakRssBytes / MiB).toFixed(1),
    };
    console.log(`audit log, stdout not read: ${JSON.stringify(figures)}`);
    expect([run.errors, run.timeouts, run.non2xx]).toEqual([0, 0, 0]);
    expect(run.requests.total).toBeGreaterThanOrEqual(REQUESTS);
    expect(dropped, JSON.stringify(figures)).toBeGreaterThan(0);
    expect(heapAfter - heapBefore, JSON.stringify(figures)).toBeLessThan(HEAP_GROWTH_LIMIT_BYTES);

    // Now someone reads: what was queued comes out, then the next line says how many were dropped before it.
    const stdout = server.child.stdout!;
    let pending = '';
    const lines: Array<Record<string, unknown>> = [];
    stdout.on('data', (chunk: Buffer) => {
      pending += chunk.toString('utf8');
      const complete = pending.split('\n');
      pending = complete.pop() ?? '';
      for (const text of complete) if (text !== '') lines.push(JSON.parse(text) as Record<string, unknown>);
    });
    const closed = new Promise((resolve) => stdout.once('close', resolve));
    const after = await load(server, 100, 1);
    expect([after.errors, after.timeouts, after.non2xx]).toEqual([0, 0, 0]);
    // A few of these found the queue still full while it drained.
    const droppedInAll = await metric(server, 'hookguard_log_lines_dropped_total{line="audit"}');
    const otherDropped = await metric(server, 'hookguard_log_lines_dropped_total{line="other"}');
    expect(await server.stop('SIGTERM', 20_000)).toBe(0);
    await closed;
    const decisions = lines.filter((line) => line.msg === 'admission decision').length;
    const reportedDropped = lines.reduce(
      (sum, line) => sum + ((line.linesDroppedBefore as number | undefined) ?? 0),
      0,
    );
    const sent = warmup.requests.total + run.requests.total + after.requests.total;
    console.log(
      `audit log, then read: ${decisions} audit lines written + ${droppedInAll} dropped = ${decisions + droppedInAll} of ${sent} requests; linesDroppedBefore adds up to ${reportedDropped}`,
    );
    // Every request's audit line was written or counted, and the count is where the gap is.
    expect(decisions + droppedInAll).toBe(sent);
    // linesDroppedBefore counts the lines of either kind dropped before it.
    expect(reportedDropped).toBe(droppedInAll + otherDropped);
    expect(lines.findIndex((line) => line.linesDroppedBefore !== undefined)).toBeGreaterThan(0);
  }, 240_000);

  it('exits after SIGTERM within log.flushTimeoutMs of draining, a full queue nobody reads discarded and said so', async () => {
    const server = await serverWithUnreadStdout();
    const run = await load(server, 5_000);
    expect([run.errors, run.timeouts, run.non2xx]).toEqual([0, 0, 0]);
    const signalled = performance.now();
    // The helper's SIGKILL comes only after Kubernetes' default grace period.
    const code = await server.stop('SIGTERM', 30_000);
    console.log(
      `audit log, SIGTERM with a full queue: exit ${code} after ${Math.round(performance.now() - signalled)} ms`,
    );
    expect(code).toBe(0);
    expect(server.stderr()).toMatch(
      /hookguard: stdout took no more log lines within log\.flushTimeoutMs \(2000 ms\): \d+ bytes of them were not written \(\d+ lines dropped before\)\n/,
    );
  }, 120_000);
});
