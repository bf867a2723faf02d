// What `npm run bench:watch` measures is a correct run: the scale stand-in (test/support/scale-apiserver.ts) answers
// label selectors and watches over HTTP as kube-apiserver does, and the built hook watcher, run by the bench's own
// child process (bench/watch-child.ts, compiled to dist-bench/ here when older than its source), sees exactly the
// labelled hooks and posts one HookFailed Event on exactly each failed one.
import { spawnSync } from 'node:child_process';
import { statSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { measureWatch } from '../../bench/watch-measure.js';
import { repoRoot } from '../support/k8s-tools.js';
import { ScaleApiServer } from '../support/scale-apiserver.js';

let servers: ScaleApiServer[] = [];
afterEach(async () => {
  for (const server of servers) await server.stop();
  servers = [];
});

async function scale(objects: number, hooks?: number): Promise<ScaleApiServer> {
  const server = await new ScaleApiServer(objects, { hooksPerKind: hooks, bookmarkIntervalMs: 300 }).start();
  servers.push(server);
  return server;
}

async function get(server: ScaleApiServer, path: string): Promise<{ status: number; body: Record<string, unknown> }> {
  const response = await fetch(`http://127.0.0.1:${server.port}${path}`);
  return { status: response.status, body: (await response.json()) as Record<string, unknown> };
}

const names = (body: Record<string, unknown>) =>
  (body.items as Array<{ metadata: { name: string } }>).map((item) => item.metadata.name);

/** The lines of a watch stream until the server ends it. */
async function watchLines(server: ScaleApiServer, path: string): Promise<Array<{ type: string; object: any }>> {
  const response = await fetch(`http://127.0.0.1:${server.port}${path}`);
  expect(response.status).toBe(200);
  return (await response.text())
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line) as { type: string; object: any });
}

describe('the scale stand-in, as kube-apiserver answers', () => {
  it('lists by label selector: hookguard.io/hook=admitted gives exactly the labelled Jobs and bare hook Pods', async () => {
    const server = await scale(2000);
    const jobs = await get(server, '/apis/batch/v1/jobs?labelSelector=hookguard.io%2Fhook%3Dadmitted');
    expect(jobs.status).toBe(200);
    expect(names(jobs.body)).toEqual(Array.from({ length: 20 }, (_, hook) => `job-${hook * 100 + 3}`));
    const pods = await get(server, '/api/v1/pods?labelSelector=hookguard.io%2Fhook');
    expect(names(pods.body)).toEqual(Array.from({ length: 20 }, (_, hook) => `pod-${hook * 100 + 53}`));
    // The hooks' own objects: a failed Job (every 50th hook, from the first) and its Pod, found by job-name.
    const failedJob = (jobs.body.items as any[])[0];
    expect(failedJob.status.conditions.map((condition: any) => [condition.type, condition.reason])).toEqual([
      ['FailureTarget', 'BackoffLimitExceeded'],
      ['Failed', 'BackoffLimitExceeded'],
    ]);
    const podsOfJob = await get(server, '/api/v1/namespaces/team-3/pods?labelSelector=job-name%3Djob-3');
    expect(names(podsOfJob.body)).toEqual(['pod-3']);
    expect((podsOfJob.body.items as any[])[0].status.containerStatuses[0].state.terminated.exitCode).toBe(1);
  });

  it('reads every selector form, AND-joined, on cluster-wide and namespaced lists, and pages them', async () => {
    // 10 hooks of 2,000: Jobs 3, 203, …, 1803 labelled; team-3 also holds 103, 303, …, 1903, not labelled.
    const server = await scale(2000, 10);
    const notLabelled = await get(server, '/apis/batch/v1/namespaces/team-3/jobs?labelSelector=!hookguard.io%2Fhook');
    expect(names(notLabelled.body)).toEqual(Array.from({ length: 10 }, (_, at) => `job-${at * 200 + 103}`));
    const otherValue = await get(
      server,
      '/apis/batch/v1/namespaces/team-3/jobs?labelSelector=hookguard.io%2Fhook!%3Dadmitted',
    );
    expect(names(otherValue.body)).toEqual(names(notLabelled.body));
    const labelled = await get(
      server,
      '/apis/batch/v1/namespaces/team-3/jobs?labelSelector=' + encodeURIComponent('hookguard.io/hook in (admitted,x)'),
    );
    expect(names(labelled.body)).toEqual(Array.from({ length: 10 }, (_, at) => `job-${at * 200 + 3}`));
    expect(
      names((await get(server, '/apis/batch/v1/namespaces/team-4/jobs?labelSelector=hookguard.io%2Fhook')).body),
    ).toEqual([]);
    const both = await get(
      server,
      '/api/v1/pods?labelSelector=' + encodeURIComponent('app.kubernetes.io/part-of in (platform-0),job-name=job-7'),
    );
    expect(names(both.body)).toEqual(['pod-7']);
    const page = await get(server, '/apis/batch/v1/jobs?labelSelector=hookguard.io%2Fhook%3Dadmitted&limit=6');
    expect(names(page.body)).toEqual(['job-3', 'job-203', 'job-403', 'job-603', 'job-803', 'job-1003']);
    const token = (page.body.metadata as { continue: string }).continue;
    const rest = await get(
      server,
      `/apis/batch/v1/jobs?labelSelector=hookguard.io%2Fhook%3Dadmitted&limit=6&continue=${encodeURIComponent(token)}`,
    );
    expect(names(rest.body)).toEqual(['job-1203', 'job-1403', 'job-1603', 'job-1803']);
    expect(rest.body.metadata).toEqual({ resourceVersion: '500000' });
  });

  it('creates an Event once per name and lists Events by field selector', async () => {
    const server = await scale(200);
    const event = {
      apiVersion: 'events.k8s.io/v1',
      kind: 'Event',
      metadata: { name: 'job-3.hookguard-hookfailed-0123456789abcdef', namespace: 'team-3' },
      eventTime: '2026-11-27T13:00:00.000000Z',
      reportingController: 'hookguard.io/hook-watcher',
      reportingInstance: 'hookguard-7d9f-abcde',
      action: 'ExplainHook',
      reason: 'HookFailed',
      type: 'Warning',
      note: 'Job job-3 failed',
      regarding: { kind: 'Job', apiVersion: 'batch/v1', name: 'job-3', namespace: 'team-3' },
    };
    const post = () =>
      fetch(`http://127.0.0.1:${server.port}/apis/events.k8s.io/v1/namespaces/team-3/events`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify(event),
      });
    expect((await post()).status).toBe(201);
    const again = await post();
    expect(again.status).toBe(409);
    expect(await again.json()).toMatchObject({
      reason: 'AlreadyExists',
      message: 'events.events.k8s.io "job-3.hookguard-hookfailed-0123456789abcdef" already exists',
    });
    const about = (name: string, namespace = 'team-3') =>
      get(server, `/apis/events.k8s.io/v1/namespaces/${namespace}/events?fieldSelector=regarding.name%3D${name}`);
    expect(names((await about('job-3')).body)).toEqual([event.metadata.name]);
    expect(names((await about('pod-3')).body)).toEqual([]);
    expect(names((await about('job-3', 'team-4')).body)).toEqual([]);
    expect(server.events).toEqual([{ reason: 'HookFailed', regarding: 'job-3' }]);
  });

  it('refuses a malformed selector, on a list and on a watch, with the 400 Status kube-apiserver sends', async () => {
    const server = await scale(200);
    const expected = {
      kind: 'Status',
      apiVersion: 'v1',
      metadata: {},
      status: 'Failure',
      message: "found '=', expected: ',' or 'end of string'",
      reason: 'BadRequest',
      code: 400,
    };
    expect(await get(server, '/apis/batch/v1/jobs?labelSelector=a%3Db%3Dc')).toEqual({ status: 400, body: expected });
    expect(await get(server, '/api/v1/pods?watch=true&labelSelector=a%3Db%3Dc')).toEqual({
      status: 400,
      body: expected,
    });
  });

  it('watches from a resourceVersion with no initial events, bookmarks when asked, and ends at timeoutSeconds', async () => {
    const server = await scale(2000);
    const selector = 'labelSelector=hookguard.io%2Fhook%3Dadmitted';
    const fromList = await watchLines(
      server,
      `/apis/batch/v1/jobs?watch=true&${selector}&resourceVersion=500000&allowWatchBookmarks=true&timeoutSeconds=3`,
    );
    expect(fromList.length).toBeGreaterThan(0);
    for (const line of fromList)
      expect(line).toEqual({
        type: 'BOOKMARK',
        object: { kind: 'Job', apiVersion: 'batch/v1', metadata: { resourceVersion: '500000' } },
      });
    const noBookmarks = await watchLines(
      server,
      `/api/v1/pods?watch=true&${selector}&resourceVersion=500000&timeoutSeconds=1`,
    );
    expect(noBookmarks).toEqual([]);
    const fromZero = await watchLines(server, `/api/v1/pods?watch=true&${selector}&resourceVersion=0&timeoutSeconds=1`);
    expect(fromZero.map((line) => `${line.type} ${line.object.metadata.name}`)).toEqual(
      Array.from({ length: 20 }, (_, hook) => `ADDED pod-${hook * 100 + 53}`),
    );
    expect(server.counts.watch).toBe(3);
  });
});

describe('the hook watcher as bench:watch runs it', () => {
  beforeAll(() => {
    const child = join(repoRoot, 'dist-bench', 'bench', 'watch-child.js');
    const builtMs = statSync(child, { throwIfNoEntry: false })?.mtimeMs ?? 0;
    const sources = ['watch-child.ts', 'built.ts'].map((name) => statSync(join(repoRoot, 'bench', name)).mtimeMs);
    if (builtMs > Math.max(...sources)) return;
    const tsc = join(repoRoot, 'node_modules', 'typescript', 'bin', 'tsc');
    const build = spawnSync(process.execPath, [tsc, '-p', 'tsconfig.bench.json'], { cwd: repoRoot, encoding: 'utf8' });
    expect(build.status, `${build.stdout}${build.stderr}`).toBe(0);
  }, 120_000);

  it('sees exactly the labelled hooks of 20,000 Jobs and Pods and posts HookFailed on exactly each failed one', async () => {
    // Longer than the watcher's 10 s pass interval: a list answered during its first pass is looked at in the next.
    const measurement = await measureWatch(20_000, 100, { watcher: true, seconds: 14 });
    expect(measurement.problems).toEqual([]);
    expect(measurement.listed).toEqual({ Job: 100, Pod: 100 });
    // Hooks 0 and 50 of each kind failed (index 3 and 10,003 for Jobs, 53 and 10,053 for bare Pods).
    expect(measurement.events).toBe(4);
    // Two lists and two watches; a Job's Pods for each failed or still running Job (2 + 2), and the Events about each
    // hook explained through both Event APIs, core v1 and events.k8s.io (as `hookguard why` reads them): the Job and
    // its Pod (8 names), each bare Pod (4), twice; the 4 HookFailed Events created.
    expect(measurement.counts).toMatchObject({ list: 6, watch: 2, event: 28 });
    expect(measurement.counts.listBytes).toBeLessThan(20_000 * 2 * 5000 * 0.02);
    expect(measurement.firstSyncMs).toBeGreaterThan(0);
  }, 60_000);
});
