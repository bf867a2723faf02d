// `npm run bench:apiserver` (issue 40, "What the API server sees"): the latency a webhook adds to the creates of a
// real control plane. Needs one running: `npm run cluster:up` (test/cluster/cluster.js), or another's with
// --kubeconfig. hookguard and the auditing echo (bench/baseline-server.ts, batched: the best echo this stack makes) run
// here as child processes, with the same certificate and a log file each, and are registered with kube-apiserver as
// the chart registers hookguard (read from the cluster's own `hookguard` webhook configurations), by URL, each for the
// namespaces labelled for it. Hook Jobs (the Job fixtures of test/fixtures that the API server admits with hookguard in
// front of it) and plain Pods are then created through kube-apiserver in four cases: hookguard registered, the echo
// registered, hookguard without a webhook (the admission policies `hookguard policies` prints, bound to that case's
// namespaces; issue 38), and neither. The cases take turns within each round, in an order that rotates, so that the
// machine's drift hits all four; each round's namespace is deleted before the next case, so the cluster stays small. Figures
// are the median of the rounds' p50 and p99; what a webhook adds is the median of its rounds' difference from the
// no-webhook case of the same round. Then an open-loop load at fixed rates goes straight to each webhook's port.
// Writes bench/results/apiserver-latest.{json,md}; exits 1 when a create failed or a case's webhook was not called
// for each hook (or another's was).
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { randomBytes } from 'node:crypto';
import { parse } from 'yaml';
import type { KubeObject } from '../src/core/types.js';
import { fixtureFiles, fixtureText } from '../test/support/fixtures.js';
import { untilEveryPolicyActs } from '../test/cluster/support/policy-probes.js';
import { repoRoot } from '../test/support/k8s-tools.js';
import { processCpuMs, writeCertificate, type ServerProcess } from '../test/support/server-process.js';
import { waitUntil } from '../test/support/wait-until.js';
import {
  KubeApi,
  median,
  openLoop,
  quantile,
  timeCreates,
  clocksSince,
  webhookClocks,
  type Create,
  type Timed,
  type WebhookRequest,
} from './apiserver-measure.js';
import { renderApiserverMarkdown } from './apiserver-report.js';
import { builtCertificateGenerator, builtDecision } from './built.js';
import { describeMachine, type Machine } from './machine.js';
import { round } from './micro.js';
import { ARGOCD_VERSION, startBenchHookguard, startEcho } from './servers.js';
import { buildWorkload, NON_HOOKS } from './workload.js';

export type Case = 'hookguard' | 'echo' | 'policies' | 'none';
export type Server = Exclude<Case, 'none' | 'policies'>;
const CASES: readonly Case[] = ['hookguard', 'echo', 'policies', 'none'];
const SERVERS: readonly Server[] = ['hookguard', 'echo'];
export const HOOK_JOB = 'hook Job';
export const PLAIN_POD = 'plain Pod';

/** The cluster's own hookguard (test/cluster/cluster.js) leaves namespaces with this label alone. */
const AUDIT_NAMESPACE_LABEL = 'hookguard.test/audit';
/** Only this bench's namespaces carry it; its value is the case, which its webhook configurations select. */
const BENCH_LABEL = 'bench.hookguard.io/apiserver';
const NAME_PREFIX = 'bench-apiserver';
/** hookguard adds at most this many times what the echo adds to a hook Job's create (issue 40). */
const ADDED_RATIO_MAX = 1.2;
/** At a fixed rate, hookguard's p99 at most this many ms above the echo's (issue 40). */
const RATE_P99_MARGIN_MS = 1;
/** The uncounted start of each fixed-rate run: its connections' handshakes, and the server warming to the rate. */
const RATE_LEAD_SECONDS = 2;

export interface CaseRound {
  /** Creates in flight at once: 1 is what one `helm install` or Argo CD sync sends; more load the machine. */
  inFlight: number;
  round: number;
  case: Case;
  kind: string;
  creates: number;
  errors: number;
  p50: number;
  p99: number;
}

export interface CaseSummary extends Omit<CaseRound, 'round'> {
  /** Median over rounds of this case's p50 (p99) less the no-webhook case's of the same round. */
  addedP50: number;
  addedP99: number;
}

/** The API server's clock on one server's webhook calls of one type, over a case's creates (bench/apiserver-measure.ts, WebhookClock). */
export interface WebhookClockRound {
  inFlight: number;
  round: number;
  server: Server;
  /** `admit` (the mutating webhook) or `validating`, as the metric says. */
  type: string;
  calls: number;
  seconds: number;
  /** Calls within 5 ms and within 25 ms: the histogram's two lowest bounds. */
  within5ms: number;
  within25ms: number;
}

export interface WebhookClockSummary {
  inFlight: number;
  server: Server;
  type: string;
  calls: number;
  /** Over every call of every round. */
  meanMs: number;
  within5ms: number;
  within25ms: number;
}

/** CPU each process used from a case's first create until its namespace was gone, per hook Job and plain Pod pair. */
export interface CpuRound {
  inFlight: number;
  round: number;
  case: Case;
  /** By process: the cluster's components (from the state file `npm run cluster:up` writes) and the case's webhook. */
  msPerPair: Record<string, number>;
}

export interface CpuSummary {
  inFlight: number;
  case: Case;
  /** The median over the rounds, by process. */
  msPerPair: Record<string, number>;
}

export interface AddedRatio {
  inFlight: number;
  p50: number;
  p99: number;
  max: number;
  metP50: boolean;
  metP99: boolean;
}

export interface RateRun {
  rate: number;
  round: number;
  server: Server;
  answered: number;
  errors: number;
  seconds: number;
  p50: number;
  p99: number;
  max: number;
  cpuMicrosPerRequest: number;
}

export interface RateSummary {
  rate: number;
  hookguard: { p50: number; p99: number; errors: number; cpuMicrosPerRequest: number };
  echo: { p50: number; p99: number; errors: number; cpuMicrosPerRequest: number };
  /** hookguard's p99 less the echo's, each the median of its rounds. */
  p99DifferenceMs: number;
  met: boolean;
}

export interface ApiserverResults {
  date: string;
  machine: Machine;
  loadAverage: { before: string; after: string };
  kubernetes: string;
  settings: {
    objectsPerKind: number;
    rounds: number;
    perRound: number;
    inFlight: number[];
    argocdVersion: string;
    /** --hookguard-mode: audit never patches. */
    hookguardMode: 'enforce' | 'audit';
    rates: number[];
    rateSeconds: number;
    rateLeadSeconds: number;
    rateRounds: number;
  };
  fixtures: string[];
  leftOut: { file: string; status: number; reason: string }[];
  cases: CaseSummary[];
  ratios: AddedRatio[];
  rates: RateSummary[];
  rateMarginMs: number;
  rounds: CaseRound[];
  rateRuns: RateRun[];
  /** The API server's own time per webhook call, each server over its case's rounds. */
  webhookClock: WebhookClockSummary[];
  webhookClockRounds: WebhookClockRound[];
  /** Empty when the cluster was not started by test/cluster/cluster.js (no state file beside the kubeconfig). */
  cpu: CpuSummary[];
  cpuRounds: CpuRound[];
  /** Webhook calls each server logged during each case of each round, and what was wrong with them. */
  calls: { inFlight: number; round: number; case: Case; hookguard: number; echo: number }[];
  problems: string[];
}

const { values: flags } = parseArgs({
  options: {
    kubeconfig: { type: 'string', default: join(repoRoot, '.cluster', 'kubeconfig') },
    objects: { type: 'string', default: '1000' },
    rounds: { type: 'string', default: '5' },
    'in-flight': { type: 'string', default: '1,12' },
    rates: { type: 'string', default: '500,2000' },
    'rate-seconds': { type: 'string', default: '10' },
    'rate-rounds': { type: 'string', default: '3' },
    // hookguard in audit mode never patches: its case then tells what the API server's applying a patch costs.
    'hookguard-mode': { type: 'string', default: 'enforce' },
  },
});
const hookguardMode = flags['hookguard-mode'];
if (hookguardMode !== 'enforce' && hookguardMode !== 'audit') throw new Error('--hookguard-mode: enforce or audit');
const objects = Number(flags.objects);
const rounds = Number(flags.rounds);
const perRound = Math.ceil(objects / rounds);
const inFlights = flags['in-flight'].split(',').filter(Boolean).map(Number);
const rates = flags.rates.split(',').filter(Boolean).map(Number);
const rateSeconds = Number(flags['rate-seconds']);
const rateRounds = Number(flags['rate-rounds']);
const loadNow = () =>
  loadavg()
    .map((value) => value.toFixed(2))
    .join(' ');
const loadBefore = loadNow();
const { argocdController, mutatePatch } = await builtDecision(ARGOCD_VERSION);
const generateDevCertificate = await builtCertificateGenerator();

/** A Job fixture as a user sends it: kubectl and Helm read YAML 1.1, where `defaultMode: 0777` is octal. */
interface JobFixture {
  file: string;
  object: KubeObject;
  /** Argo CD's hooks are created by its controller, Helm's by the user running Helm (the admin here). */
  headers: Record<string, string>;
}
const jobFixtures: JobFixture[] = fixtureFiles()
  .map((file) => ({ file, object: parse(fixtureText(file), { version: '1.1' }) as KubeObject }))
  .filter(({ object }) => object.kind === 'Job')
  .map(({ file, object }): JobFixture => ({
    file,
    object,
    headers:
      object.metadata?.annotations?.['argocd.argoproj.io/hook'] === undefined
        ? {}
        : // The admin may act as anyone; system:masters keeps the controller's creates authorised here, as its own
          // ClusterRole does in a real cluster.
          { 'impersonate-user': argocdController, 'impersonate-group': 'system:masters' },
  }));
// The non-hook Pod of the bench's mix, without its owner: the garbage collector would delete a Pod whose owner
// does not exist, adding deletes to the case being measured.
const plainPod: KubeObject = (() => {
  const pod = structuredClone(NON_HOOKS.find((entry) => entry.object.kind === 'Pod')?.object) as KubeObject;
  delete pod.metadata?.ownerReferences;
  return pod;
})();
/** The ServiceAccounts the Jobs' Pods run as: the Job controller could not create their Pods without them. */
const serviceAccounts = [
  ...new Set(
    jobFixtures.flatMap(({ object }) => {
      const name = (object.spec as { template?: { spec?: { serviceAccountName?: string } } } | undefined)?.template
        ?.spec?.serviceAccountName;
      return name === undefined ? [] : [name];
    }),
  ),
];

/** `object` named `name`, in no namespace of its own (the request's path says which). */
function named(object: KubeObject, name: string): string {
  const copy = structuredClone(object);
  copy.metadata = { ...copy.metadata, name };
  delete copy.metadata.namespace;
  return JSON.stringify(copy);
}

function jobCreate(namespace: string, fixture: JobFixture, name: string): Create {
  return {
    kind: HOOK_JOB,
    path: `/apis/batch/v1/namespaces/${namespace}/jobs`,
    // Job names end up in a label of their Pods (batch.kubernetes.io/job-name): at most 63 characters.
    body: named(fixture.object, `${(fixture.object.metadata?.name ?? 'job').slice(0, 50)}-${name}`),
    headers: fixture.headers,
  };
}

function podCreate(namespace: string, name: string): Create {
  return { kind: PLAIN_POD, path: `/api/v1/namespaces/${namespace}/pods`, body: named(plainPod, name), headers: {} };
}

/** Lines a server has logged so far: one per webhook call for both (hookguard's audit line, the echo's line). */
function loggedLines(file: string): number {
  const text = readFileSync(file);
  let lines = 0;
  for (let at = text.indexOf(10); at !== -1; at = text.indexOf(10, at + 1)) lines++;
  return lines;
}

const api = await KubeApi.connect(flags.kubeconfig, Math.max(...inFlights));
const version = await api.expect([200], 'GET', '/version');
const kubernetes = (JSON.parse(version.body) as { gitVersion: string }).gitVersion;
const certificate = writeCertificate(await generateDevCertificate());
const logDir = mkdtempSync(join(tmpdir(), 'hookguard-bench-apiserver-'));
const logFiles: Record<Server, string> = { hookguard: join(logDir, 'hookguard.log'), echo: join(logDir, 'echo.log') };
const servers = {} as Record<Server, ServerProcess>;
const namespaces = new Set<string>();
/** What this bench made outside its namespaces (webhook configurations, policies, bindings, parameters), by path. */
const configurations: string[] = [];
const problems: string[] = [];
/** The names the bench gives each server's webhooks (the chart's, prefixed), which the API server's metrics carry. */
const webhookNames = new Map<string, { server: Server; type: string }>();

const WEBHOOK_KINDS = [
  { kind: 'MutatingWebhookConfiguration', plural: 'mutatingwebhookconfigurations' },
  { kind: 'ValidatingWebhookConfiguration', plural: 'validatingwebhookconfigurations' },
] as const;
const admissionPath = (plural: string) => `/apis/admissionregistration.k8s.io/v1/${plural}`;

interface Webhook {
  name: string;
  clientConfig: { service?: { path?: string } };
  [field: string]: unknown;
}

/** hookguard's webhooks as the chart registers them, called by URL at `server`, for the namespaces of `name`. */
async function register(name: Server, server: ServerProcess): Promise<void> {
  for (const { kind, plural } of WEBHOOK_KINDS) {
    const chart = JSON.parse((await api.expect([200], 'GET', `${admissionPath(plural)}/hookguard`)).body) as {
      webhooks: Webhook[];
    };
    const configuration = `${NAME_PREFIX}-${name}`;
    // A run that was killed leaves its configurations behind: the names are this bench's own.
    await api.expect([200, 404], 'DELETE', `${admissionPath(plural)}/${configuration}`);
    configurations.push(`${admissionPath(plural)}/${configuration}`);
    await api.expect([201], 'POST', admissionPath(plural), {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind,
      metadata: { name: configuration },
      webhooks: chart.webhooks.map((webhook) => {
        // The chart's names made the server's own, so that its calls are told apart in the API server's metrics.
        const webhookName = `${name}.${webhook.name}`;
        webhookNames.set(webhookName, {
          server: name,
          type: kind === 'MutatingWebhookConfiguration' ? 'admit' : 'validating',
        });
        return {
          ...webhook,
          name: webhookName,
          clientConfig: {
            url: `${server.url}${webhook.clientConfig.service?.path ?? ''}`,
            caBundle: Buffer.from(certificate.cert).toString('base64'),
          },
          namespaceSelector: { matchLabels: { [BENCH_LABEL]: name } },
          // The chart's Ignore would turn a failed or timed-out call into a fast create, measured as one.
          failurePolicy: 'Fail',
        };
      }),
    });
  }
}

/** Where the policies case's parameters ConfigMap goes (hookguard-policy-params, which its bindings read). */
const PARAMS_NAMESPACE = 'default';

/**
 * The admission policies of `hookguard policies` (the built CLI, Argo CD at the bench's version), renamed as this
 * bench's own and bound to the policies case's namespaces only.
 */
async function applyPolicies(): Promise<void> {
  const printed = execFileSync(
    process.execPath,
    [
      join(repoRoot, 'dist', 'cli', 'main.js'),
      'policies',
      '--output',
      'json',
      '--argocd-version',
      ARGOCD_VERSION,
      '--namespace',
      PARAMS_NAMESPACE,
    ],
    { encoding: 'utf8' },
  );
  const renamed = (name: string) => `${NAME_PREFIX}-${name}`;
  for (const object of (JSON.parse(printed) as { items: KubeObject[] }).items) {
    const kind = object.kind ?? '';
    if (kind === 'ConfigMap') {
      const path = `/api/v1/namespaces/${PARAMS_NAMESPACE}/configmaps`;
      await api.expect([200, 404], 'DELETE', `${path}/${object.metadata!.name}`);
      await api.expect([201], 'POST', path, object);
      configurations.push(`${path}/${object.metadata!.name}`);
      continue;
    }
    const plural = kind.toLowerCase().replace(/y$/, 'ie') + 's';
    const name = renamed(object.metadata!.name!);
    const spec = object.spec as Record<string, unknown>;
    const body = {
      ...object,
      metadata: { ...object.metadata, name },
      spec: kind.endsWith('Binding')
        ? {
            ...spec,
            policyName: renamed(spec.policyName as string),
            matchResources: { namespaceSelector: { matchLabels: { [BENCH_LABEL]: 'policies' } } },
          }
        : spec,
    };
    await api.expect([200, 404], 'DELETE', `${admissionPath(plural)}/${name}`);
    configurations.push(`${admissionPath(plural)}/${name}`);
    await api.expect([201], 'POST', admissionPath(plural), body);
  }
}

/** A server dry run of a probe in `namespace`: the object as the API server would store it, and its warnings. */
async function dryRunCreate(
  namespace: string,
  object: KubeObject,
): Promise<{ stored: KubeObject; warnings: string[] }> {
  const base =
    object.kind === 'Job' ? `/apis/batch/v1/namespaces/${namespace}/jobs` : `/api/v1/namespaces/${namespace}/pods`;
  const reply = await api.request('POST', `${base}?dryRun=All`, JSON.stringify(object));
  if (reply.status !== 201) throw new Error(`dry run of ${object.metadata?.name}: ${reply.status} ${reply.body}`);
  return { stored: JSON.parse(reply.body) as KubeObject, warnings: [String(reply.headers.warning ?? '')] };
}

/**
 * The pids of the cluster's processes, from the state file test/cluster/cluster.js writes beside the kubeconfig
 * (none for another cluster): their CPU per case says where a webhook's cost lands besides its own process.
 */
function clusterProcesses(kubeconfig: string): Record<string, number> {
  const stateFile = join(dirname(kubeconfig), 'state.json');
  if (!existsSync(stateFile)) return {};
  const { pids } = JSON.parse(readFileSync(stateFile, 'utf8')) as { pids: Record<string, number> };
  // The cluster's own hookguard is left out: the bench's namespaces are out of its reach.
  return Object.fromEntries(Object.entries(pids).filter(([name]) => name !== 'hookguard'));
}

/** A namespace for `kind`, out of the cluster's hookguard's reach, with the fixtures' ServiceAccounts. */
async function createNamespace(which: Case, label: string): Promise<string> {
  const name = `${NAME_PREFIX}-${which}-${label}-${randomBytes(3).toString('hex')}`;
  const labels = { [AUDIT_NAMESPACE_LABEL]: 'true', [BENCH_LABEL]: which };
  namespaces.add(name);
  await api.expect([201], 'POST', '/api/v1/namespaces', {
    apiVersion: 'v1',
    kind: 'Namespace',
    metadata: { name, labels },
  });
  for (const account of serviceAccounts)
    await api.expect([201], 'POST', `/api/v1/namespaces/${name}/serviceaccounts`, { metadata: { name: account } });
  // The ServiceAccount controller makes `default` a moment later; the plain Pods run as it.
  await waitUntil(
    `ServiceAccount default in ${name}`,
    async () => (await api.request('GET', `/api/v1/namespaces/${name}/serviceaccounts/default`)).status === 200,
  );
  return name;
}

/** Deletes the namespace and waits until it is gone: the next case starts on a cluster as small as this one did. */
async function deleteNamespace(name: string): Promise<void> {
  await api.expect([200, 202, 404], 'DELETE', `/api/v1/namespaces/${name}`);
  await waitUntil(
    `namespace ${name} deleted`,
    async () => (await api.request('GET', `/api/v1/namespaces/${name}`)).status === 404,
    300,
  );
  namespaces.delete(name);
}

/**
 * The API server's webhook configurations are cached, and a new one takes effect a moment after it is stored: creates
 * one hook Job after another in `namespace` until `server` logs a call.
 */
async function waitForWebhook(server: Server, namespace: string): Promise<void> {
  const fixture = jobFixtures.find((entry) => entry.headers['impersonate-user'] === undefined) ?? jobFixtures[0];
  if (fixture === undefined) throw new Error('no Job fixture');
  const before = loggedLines(logFiles[server]);
  let attempt = 0;
  await waitUntil(`the ${server} webhook in force`, async () => {
    const create = jobCreate(namespace, fixture, `wait-${attempt++}`);
    await api.request('POST', create.path, create.body, create.headers);
    return loggedLines(logFiles[server]) > before;
  });
}

function summariseRound(inFlight: number, roundNumber: number, which: Case, timed: readonly Timed[]): CaseRound[] {
  return [HOOK_JOB, PLAIN_POD].map((kind) => {
    const mine = timed.filter((entry) => entry.kind === kind);
    const ok = mine.filter((entry) => entry.status === 201).map((entry) => entry.ms);
    return {
      inFlight,
      round: roundNumber,
      case: which,
      kind,
      creates: mine.length,
      errors: mine.length - ok.length,
      p50: round(quantile(ok, 0.5), 2),
      p99: round(quantile(ok, 0.99), 2),
    };
  });
}

function summariseCases(all: readonly CaseRound[]): CaseSummary[] {
  return inFlights.flatMap((inFlight) =>
    [HOOK_JOB, PLAIN_POD].flatMap((kind) =>
      CASES.map((which) => {
        const mine = all.filter((entry) => entry.inFlight === inFlight && entry.kind === kind && entry.case === which);
        const none = (roundNumber: number) =>
          all.find(
            (entry) =>
              entry.inFlight === inFlight &&
              entry.kind === kind &&
              entry.case === 'none' &&
              entry.round === roundNumber,
          ) as CaseRound;
        return {
          inFlight,
          case: which,
          kind,
          creates: mine.reduce((sum, entry) => sum + entry.creates, 0),
          errors: mine.reduce((sum, entry) => sum + entry.errors, 0),
          p50: round(median(mine.map((entry) => entry.p50)), 2),
          p99: round(median(mine.map((entry) => entry.p99)), 2),
          addedP50: round(median(mine.map((entry) => entry.p50 - none(entry.round).p50)), 2),
          addedP99: round(median(mine.map((entry) => entry.p99 - none(entry.round).p99)), 2),
        };
      }),
    ),
  );
}

function summariseCpu(cpuRounds: readonly CpuRound[]): CpuSummary[] {
  return inFlights.flatMap((inFlight) =>
    CASES.map((which) => {
      const mine = cpuRounds.filter((entry) => entry.inFlight === inFlight && entry.case === which);
      const processes = [...new Set(mine.flatMap((entry) => Object.keys(entry.msPerPair)))];
      return {
        inFlight,
        case: which,
        msPerPair: Object.fromEntries(
          processes.map((name) => [name, round(median(mine.map((entry) => entry.msPerPair[name] ?? 0)), 3)]),
        ),
      };
    }),
  );
}

function summariseClocks(clockRounds: readonly WebhookClockRound[]): WebhookClockSummary[] {
  return inFlights.flatMap((inFlight) =>
    SERVERS.flatMap((server) =>
      ['admit', 'validating'].map((type) => {
        const mine = clockRounds.filter(
          (entry) => entry.inFlight === inFlight && entry.server === server && entry.type === type,
        );
        const sum = (field: 'calls' | 'seconds' | 'within5ms' | 'within25ms') =>
          mine.reduce((total, entry) => total + entry[field], 0);
        const calls = sum('calls');
        return {
          inFlight,
          server,
          type,
          calls,
          meanMs: round((sum('seconds') * 1000) / calls, 2),
          within5ms: sum('within5ms'),
          within25ms: sum('within25ms'),
        };
      }),
    ),
  );
}

/** The hook requests of the bench's mix: the chart's matchConditions send the webhook nothing else. */
function webhookRequests(): WebhookRequest[] {
  return buildWorkload(argocdController, mutatePatch)
    .requests.filter((entry) => entry.hook)
    .map((entry) => ({ path: `/${entry.endpoint}`, body: entry.body }));
}

async function measureRates(): Promise<RateRun[]> {
  const requests = webhookRequests();
  const runs: RateRun[] = [];
  for (const rate of rates) {
    for (let roundNumber = 1; roundNumber <= rateRounds; roundNumber++) {
      const order = roundNumber % 2 === 1 ? SERVERS : [...SERVERS].reverse();
      for (const server of order) {
        const cpuBefore = servers[server].cpuMs();
        const result = await openLoop(
          servers[server].port,
          certificate.cert,
          requests,
          rate,
          RATE_LEAD_SECONDS,
          rateSeconds,
        );
        const cpuMs = servers[server].cpuMs() - cpuBefore;
        const run: RateRun = {
          rate,
          round: roundNumber,
          server,
          answered: result.latencies.length,
          errors: result.errors,
          seconds: round(result.seconds, 2),
          p50: round(quantile(result.latencies, 0.5), 2),
          p99: round(quantile(result.latencies, 0.99), 2),
          max: round(Math.max(...result.latencies), 2),
          // The server's CPU covers the lead-in too (its handshakes among it): divided by every request sent.
          cpuMicrosPerRequest: Math.round((cpuMs * 1000) / result.sent),
        };
        runs.push(run);
        console.log(
          `  ${rate}/s round ${roundNumber} ${server.padEnd(9)} p50 ${run.p50} ms  p99 ${run.p99} ms  max ${run.max} ms  ` +
            `errors ${run.errors}  CPU ${run.cpuMicrosPerRequest} µs/req`,
        );
      }
    }
  }
  return runs;
}

function summariseRates(runs: readonly RateRun[]): RateSummary[] {
  return rates.map((rate) => {
    const of = (server: Server) => {
      const mine = runs.filter((run) => run.rate === rate && run.server === server);
      return {
        p50: round(median(mine.map((run) => run.p50)), 2),
        p99: round(median(mine.map((run) => run.p99)), 2),
        errors: mine.reduce((sum, run) => sum + run.errors, 0),
        cpuMicrosPerRequest: Math.round(median(mine.map((run) => run.cpuMicrosPerRequest))),
      };
    };
    const hookguard = of('hookguard');
    const echo = of('echo');
    const p99DifferenceMs = round(hookguard.p99 - echo.p99, 2);
    return { rate, hookguard, echo, p99DifferenceMs, met: p99DifferenceMs <= RATE_P99_MARGIN_MS };
  });
}

try {
  servers.hookguard = await startBenchHookguard(certificate, logFiles.hookguard, { mode: hookguardMode });
  servers.echo = await startEcho(certificate, logFiles.echo, true);
  for (const server of SERVERS) await register(server, servers[server]);
  await applyPolicies();

  // Which fixtures the API server admits with hookguard in front of it (a denied create answers sooner, and the
  // echo admits everything); the same creates in the other cases warm each path before the rounds.
  const probes = {} as Record<Case, string>;
  for (const which of CASES) probes[which] = await createNamespace(which, 'probe');
  for (const server of SERVERS) await waitForWebhook(server, probes[server]);
  await untilEveryPolicyActs((object) => dryRunCreate(probes.policies, object));
  const admitted: JobFixture[] = [];
  const leftOut: ApiserverResults['leftOut'] = [];
  for (const [index, fixture] of jobFixtures.entries()) {
    // Numbered: two fixtures may share a name (kyverno's scale-to-zero hook, in two chart versions).
    const create = jobCreate(probes.hookguard, fixture, `probe-${index}`);
    const reply = await api.request('POST', create.path, create.body, create.headers);
    if (reply.status === 201) admitted.push(fixture);
    else {
      const reason = (JSON.parse(reply.body) as { message?: string }).message ?? reply.body;
      leftOut.push({ file: fixture.file, status: reply.status, reason: reason.slice(0, 300) });
    }
  }
  if (admitted.length === 0)
    throw new Error(`the API server admitted none of the Job fixtures: ${JSON.stringify(leftOut)}`);
  for (const which of CASES) {
    const warm = admitted.flatMap((fixture, index) => [
      jobCreate(probes[which], fixture, `warm-${index}`),
      podCreate(probes[which], `warm-${index}`),
    ]);
    await timeCreates(api, warm, Math.max(...inFlights));
  }
  for (const which of CASES) await deleteNamespace(probes[which]);
  console.log(
    `bench:apiserver: ${admitted.length} Job fixtures admitted, ${leftOut.length} left out` +
      `${leftOut.map((entry) => `\n  ${entry.file}: ${entry.status} ${entry.reason}`).join('')}\n` +
      `bench:apiserver: ${rounds} rounds of ${perRound} hook Jobs and ${perRound} plain Pods per case, ` +
      `${inFlights.join(' and then ')} in flight, Kubernetes ${kubernetes}`,
  );

  const roundResults: CaseRound[] = [];
  const clockRounds: WebhookClockRound[] = [];
  const cpuRounds: CpuRound[] = [];
  const calls: ApiserverResults['calls'] = [];
  const clusterPids = clusterProcesses(flags.kubeconfig);
  const cpuNow = (which: Case): Record<string, number> => {
    const processes: Record<string, number> = {};
    for (const [name, pid] of Object.entries(clusterPids)) processes[name] = processCpuMs(pid);
    if (which !== 'none' && which !== 'policies') processes['webhook'] = servers[which].cpuMs();
    return processes;
  };
  for (const inFlight of inFlights)
    for (let roundNumber = 1; roundNumber <= rounds; roundNumber++) {
      const order = CASES.map((_, index) => CASES[(index + roundNumber - 1) % CASES.length] as Case);
      for (const which of order) {
        const namespace = await createNamespace(which, `c${inFlight}-r${roundNumber}`);
        const creates = Array.from({ length: perRound }, (_, index) => [
          jobCreate(namespace, admitted[index % admitted.length] as JobFixture, String(index)),
          podCreate(namespace, `web-${index}`),
        ]).flat();
        const linesBefore = { hookguard: loggedLines(logFiles.hookguard), echo: loggedLines(logFiles.echo) };
        const clocksBefore = await webhookClocks(api, webhookNames);
        const cpuBefore = cpuNow(which);
        const timed = await timeCreates(api, creates, inFlight);
        for (const [key, clock] of clocksSince(clocksBefore, await webhookClocks(api, webhookNames))) {
          const { server, type } = webhookNames.get(key.split(' ')[0] as string) as { server: Server; type: string };
          if (server !== which) continue;
          clockRounds.push({
            inFlight,
            round: roundNumber,
            server,
            type,
            calls: clock.calls,
            seconds: clock.seconds,
            within5ms: clock.atMost.get('0.005') ?? 0,
            within25ms: clock.atMost.get('0.025') ?? 0,
          });
        }
        await deleteNamespace(namespace);
        const cpuAfter = cpuNow(which);
        cpuRounds.push({
          inFlight,
          round: roundNumber,
          case: which,
          msPerPair: Object.fromEntries(
            Object.entries(cpuAfter).map(([name, ms]) => [name, round((ms - (cpuBefore[name] ?? 0)) / perRound, 3)]),
          ),
        });
        const called = {
          hookguard: loggedLines(logFiles.hookguard) - linesBefore.hookguard,
          echo: loggedLines(logFiles.echo) - linesBefore.echo,
        };
        calls.push({ inFlight, round: roundNumber, case: which, ...called });
        const results = summariseRound(inFlight, roundNumber, which, timed);
        roundResults.push(...results);
        const where = `${inFlight} in flight, round ${roundNumber}, ${which}`;
        for (const failure of timed.filter((entry) => entry.error !== undefined).slice(0, 3))
          problems.push(`${where}: a ${failure.kind} answered ${failure.status}: ${failure.error}`);
        const hooksCreated = results.find((entry) => entry.kind === HOOK_JOB)?.creates ?? 0;
        for (const server of SERVERS) {
          // Each hook Job is sent to /mutate and to /validate: two calls, or more where the Job controller's Pods
          // carry a hook annotation too.
          if (server === which && called[server] < 2 * hooksCreated)
            problems.push(`${where}: ${server} logged ${called[server]} calls for ${hooksCreated} hook Jobs`);
          if (server !== which && called[server] > 0)
            problems.push(`${where}: ${server} was called ${called[server]} times`);
        }
        console.log(
          `  ${inFlight} in flight, round ${roundNumber} ${which.padEnd(9)} ${results
            .map((entry) => `${entry.kind} p50 ${entry.p50} ms p99 ${entry.p99} ms errors ${entry.errors}`)
            .join('; ')}; webhook calls ${JSON.stringify(called)}`,
        );
      }
    }
  const cases = summariseCases(roundResults);
  const ratios = inFlights.map((inFlight): AddedRatio => {
    const added = (server: Server) =>
      cases.find(
        (entry) => entry.inFlight === inFlight && entry.kind === HOOK_JOB && entry.case === server,
      ) as CaseSummary;
    const hookguardAdded = added('hookguard');
    const echoAdded = added('echo');
    // Compared as products, not as the ratio: where the echo added nothing measurable (zero or less, in noise), a
    // ratio's sign would say "met" for any hookguard figure.
    return {
      inFlight,
      p50: round(hookguardAdded.addedP50 / echoAdded.addedP50, 2),
      p99: round(hookguardAdded.addedP99 / echoAdded.addedP99, 2),
      max: ADDED_RATIO_MAX,
      metP50: hookguardAdded.addedP50 <= ADDED_RATIO_MAX * echoAdded.addedP50,
      metP99: hookguardAdded.addedP99 <= ADDED_RATIO_MAX * echoAdded.addedP99,
    };
  });

  console.log('bench:apiserver: open loop, straight to the webhook ports');
  const rateRuns = await measureRates();
  const results: ApiserverResults = {
    date: new Date().toISOString(),
    machine: describeMachine(),
    loadAverage: { before: loadBefore, after: loadNow() },
    kubernetes,
    settings: {
      objectsPerKind: perRound * rounds,
      rounds,
      perRound,
      inFlight: inFlights,
      argocdVersion: ARGOCD_VERSION,
      hookguardMode,
      rates,
      rateSeconds,
      rateLeadSeconds: RATE_LEAD_SECONDS,
      rateRounds,
    },
    fixtures: admitted.map((fixture) => fixture.file),
    leftOut,
    cases,
    ratios,
    rates: summariseRates(rateRuns),
    rateMarginMs: RATE_P99_MARGIN_MS,
    rounds: roundResults,
    rateRuns,
    webhookClock: summariseClocks(clockRounds),
    webhookClockRounds: clockRounds,
    cpu: summariseCpu(cpuRounds),
    cpuRounds,
    calls,
    problems,
  };
  const markdown = renderApiserverMarkdown(results);
  console.log(`\n${markdown}`);
  const dir = join(repoRoot, 'bench', 'results');
  writeFileSync(join(dir, 'apiserver-latest.json'), `${JSON.stringify(results, null, 2)}\n`);
  writeFileSync(join(dir, 'apiserver-latest.md'), markdown);
  console.log(`bench:apiserver: wrote ${join(dir, 'apiserver-latest.json')} and apiserver-latest.md`);
  if (problems.length > 0) process.exitCode = 1;
} finally {
  for (const name of namespaces) await api.request('DELETE', `/api/v1/namespaces/${name}`).catch(() => undefined);
  for (const path of configurations) await api.request('DELETE', path).catch(() => undefined);
  for (const server of Object.values(servers)) await server.stop('SIGKILL', 1000);
  api.close();
  certificate.remove();
  rmSync(logDir, { recursive: true, force: true });
}
